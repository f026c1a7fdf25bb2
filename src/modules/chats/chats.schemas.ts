import { z } from 'zod';
import { pathId } from '../../platform/ids.js';
import { agentFrameworkNames } from '../agents/index.js';
import { userOut } from '../users/index.js';
import { modelParametersSchema } from '../models/index.js';

const timestamp = z.iso.datetime({ offset: true });

export const chatParams = z.object({ ws: pathId, id: pathId });
export const workspaceParams = z.object({ ws: pathId });

export const chatOut = z.object({
  id: z.uuid(),
  workspace: z.uuid(),
  owner: z.number().int(),
  name: z.string(),
  ai_model: z.string(),
  ai_provider: z.string(),
  system_prompt: z.string(),
  temperature: z.number().nullable(),
  agent_framework: z.string(),
  model_parameters: z.record(z.string(), z.unknown()),
  is_public: z.boolean(),
  link_uuid: z.uuid(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ChatOut = z.output<typeof chatOut>;

const chatFields = {
  name: z.string().trim().max(200),
  ai_model: z.string().trim().min(1).max(100),
  system_prompt: z.string().max(20_000),
  temperature: z.number().min(0).max(2).nullable(),
  agent_framework: z.enum(agentFrameworkNames),
  model_parameters: modelParametersSchema,
};

export const createChatBody = z.object({
  name: chatFields.name.default(''),
  ai_model: chatFields.ai_model.optional(),
  system_prompt: chatFields.system_prompt.default(''),
  temperature: chatFields.temperature.optional(),
  agent_framework: chatFields.agent_framework.default('tools'),
  model_parameters: chatFields.model_parameters.default({}),
});
export type CreateChatInput = z.output<typeof createChatBody>;

/** PATCH: any subset; PUT takes the same fields (missing ones keep their value, as DRF's partial=False would reject). */
export const updateChatBody = z.object({
  name: chatFields.name.optional(),
  ai_model: chatFields.ai_model.optional(),
  system_prompt: chatFields.system_prompt.optional(),
  temperature: chatFields.temperature.optional(),
  agent_framework: chatFields.agent_framework.optional(),
  model_parameters: chatFields.model_parameters.optional(),
});
export type UpdateChatInput = z.output<typeof updateChatBody>;

export const togglePublicOut = z.object({ is_public: z.boolean(), link_uuid: z.uuid() });
export const shareBody = z.object({ email: z.email().max(254).transform((v) => v.trim().toLowerCase()) });
export const shareOut = z.object({ id: z.uuid(), user: userOut, created_at: timestamp });
export type ShareOut = z.output<typeof shareOut>;

export const sharedLinkParams = z.object({ link_uuid: pathId });

/** The public view: chat name, model and messages, nothing that identifies settings or people. */
export const publicChatOut = z.object({
  name: z.string(),
  ai_model: z.string(),
  ai_provider: z.string(),
  is_public: z.boolean(),
  created_at: timestamp,
  messages: z.array(
    z.object({
      id: z.uuid(),
      role: z.enum(['user', 'assistant']),
      content: z.string(),
      parent: z.uuid().nullable(),
      stopped: z.boolean(),
      created_at: timestamp,
    }),
  ),
});
export type PublicChatOut = z.output<typeof publicChatOut>;
