import { describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/support/app.js';
import { subscribe } from '../../../test/support/billing.js';
import { newUser, newWorkspace } from '../../../test/support/factories.js';

const t = useTestApp();

describe('GET ai-models/', () => {
  it('returns the whole catalog with included and is_default for the free plan', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    const res = await t.get(`/api/workspaces/${ws.id}/ai-models/`, owner);
    expect(res.statusCode).toBe(200);
    const models = res.json() as Array<{ id: string; tier: string; included: boolean; is_default: boolean }>;
    expect(models).toHaveLength(t.deps.catalog.models.length);
    for (const model of models) expect(model.included, model.id).toBe(model.tier === 'fast');
    expect(models.filter((m) => m.is_default).map((m) => m.id)).toEqual(['gpt-4.1-mini']);
    const sonnet = models.find((m) => m.id === 'claude-sonnet-4-5')!;
    expect(sonnet).toMatchObject({
      label: 'Claude Sonnet 4.5',
      provider: 'anthropic',
      tier: 'standard',
      max_output_tokens: 64000,
      controls: { stop: 'stop_sequences', thinking: true, temperature_or_top_p: true, temperature: { max: 1 } },
    });
  });

  it('follows the plan: team includes premium models and has its own default', async () => {
    const owner = await newUser(t);
    const ws = await newWorkspace(t, owner);
    await subscribe(t, ws.id, 'team', { payer: owner });
    const models = (await t.get(`/api/workspaces/${ws.id}/ai-models/`, owner)).json() as Array<{
      id: string;
      included: boolean;
      is_default: boolean;
    }>;
    expect(models.every((m) => m.included)).toBe(true);
    expect(models.find((m) => m.is_default)!.id).toBe('gpt-4.1');
  });
});
