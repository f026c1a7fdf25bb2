import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCatalog, loadCatalog, tokenCost } from './catalog.js';
import { modelTiers } from './models.schemas.js';

const catalog = createCatalog();

describe('built-in catalog', () => {
  it('ships OpenAI, Anthropic and Google models in every tier', () => {
    for (const provider of ['openai', 'anthropic', 'google']) {
      const tiers = new Set(catalog.models.filter((m) => m.provider === provider).map((m) => m.tier));
      expect([...tiers].sort(), provider).toEqual([...modelTiers].sort());
    }
  });

  it('has unique ids', () => {
    const ids = catalog.models.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives Claude 4.x models stop_sequences, thinking and temperature-or-top_p', () => {
    const sonnet = catalog.chatModel('claude-sonnet-4-5')!;
    expect(sonnet.controls).toMatchObject({
      temperature: { max: 1 },
      stop: 'stop_sequences',
      thinking: true,
      temperature_or_top_p: true,
      reasoning_effort: [],
      seed: false,
      penalties: false,
    });
  });

  it('gives OpenAI reasoning models effort levels and no temperature, top_p or stop', () => {
    for (const id of ['o3', 'o4-mini', 'gpt-5', 'gpt-5-mini']) {
      const model = catalog.chatModel(id)!;
      expect(model.controls.temperature, id).toBeNull();
      expect(model.controls.top_p, id).toBe(false);
      expect(model.controls.stop, id).toBe(false);
      expect(model.controls.reasoning_effort.length, id).toBeGreaterThanOrEqual(3);
    }
    expect(catalog.chatModel('gpt-5')!.controls.reasoning_effort).toContain('minimal');
  });

  it('gives OpenAI sampling models temperature up to 2 and the `stop` parameter', () => {
    expect(catalog.chatModel('gpt-4.1')!.controls).toMatchObject({
      temperature: { max: 2 },
      stop: 'stop',
      seed: true,
      penalties: true,
      top_k: false,
      reasoning_effort: [],
    });
  });

  it('prices embeddings and transcription', () => {
    expect(catalog.embeddingModel('text-embedding-3-small')!.input_price_per_million).toBe(0.02);
    expect(catalog.transcriptionModel('whisper-1')!.price_per_minute).toBe(0.006);
  });

  it('computes token cost per million', () => {
    expect(tokenCost({ input_price_per_million: 2, output_price_per_million: 8 }, 1_000_000, 500_000)).toBe(6);
  });
});

describe('MODEL_CATALOG_FILE', () => {
  const write = (content: unknown) => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'catalog-')), 'catalog.json');
    writeFileSync(file, JSON.stringify(content));
    return file;
  };

  it('adds new models and replaces known ones', () => {
    const file = write({
      models: [
        {
          id: 'llama-3.3-70b',
          label: 'Llama 3.3 70B (local)',
          provider: 'openai-compatible',
          tier: 'standard',
          max_output_tokens: 4096,
          context_window: 131072,
          input_price_per_million: 0,
          output_price_per_million: 0,
          controls: {
            temperature: { max: 2 },
            top_p: true,
            top_k: true,
            penalties: true,
            seed: true,
            stop: 'stop',
            reasoning_effort: [],
            thinking: false,
            temperature_or_top_p: false,
          },
        },
        { ...createCatalog().chatModel('gpt-4.1')!, output_price_per_million: 99 },
      ],
    });
    const extended = loadCatalog(file);
    expect(extended.chatModel('llama-3.3-70b')!.provider).toBe('openai-compatible');
    expect(extended.chatModel('gpt-4.1')!.output_price_per_million).toBe(99);
    expect(extended.models.length).toBe(catalog.models.length + 1);
  });

  it('refuses an invalid file naming the field', () => {
    const file = write({ models: [{ id: 'x', provider: 'nobody' }] });
    expect(() => loadCatalog(file)).toThrow(/models\.0\.provider/);
  });
});
