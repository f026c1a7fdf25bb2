import type { ModelMessage, ToolSet } from 'ai';
import { z } from 'zod';
import { AppError } from '../../platform/errors.js';
import { aiSdk, type BuiltCallSettings } from '../models/index.js';
import type { ChatLanguageModel } from '../models/index.js';
import type { KnowledgeHit, MessageSource } from './knowledge-port.js';
import type { AgentFrameworkName } from './frameworks.names.js';
import { type StreamedText, streamPlainText, supportsPlainStream } from './model-stream.js';

export type AgentEvent =
  | { type: 'delta'; text: string }
  | { type: 'tool'; id: string; name: string; status: 'started' | 'finished' };

export interface AgentInput {
  model: ChatLanguageModel;
  system: string | undefined;
  messages: ModelMessage[];
  call: BuiltCallSettings;
  abortSignal: AbortSignal;
  /** The user's message this run answers (what `direct` searches the knowledge bases for). */
  query: string;
  /**
   * Present when the chat has knowledge bases attached and the framework can use them (`tools`:
   * the model can call tools; `direct`: always).
   */
  searchKnowledge: ((query: string) => Promise<KnowledgeHit[]>) | null;
  onEvent: (event: AgentEvent) => void;
}

export interface AgentResult {
  text: string;
  /** Tokens as the provider reported them; null when the call ended before it said (a stop). */
  usage: { inputTokens: number; outputTokens: number } | null;
  stopped: boolean;
  sources: MessageSource[];
}

export interface AgentFramework {
  readonly name: AgentFrameworkName;
  /** Whether it reaches attached knowledge through a tool call (so only on models with tools). */
  readonly searchesThroughTools: boolean;
  run(input: AgentInput): Promise<AgentResult>;
}

/**
 * The model failed (provider error, broken stream): 502 `model_failed` with a generic retry
 * message, answered by the one error handler like every AppError.
 */
export class ModelCallError extends AppError {
  /** Shown to the user; the provider's error stays in `cause`, for the log only. */
  static readonly DETAIL = 'The model could not complete the reply. Please try again.';
  constructor(cause: unknown) {
    super(502, 'model_failed', ModelCallError.DETAIL);
    this.cause = cause;
  }
}

const MAX_TOOL_STEPS = 5;
const SEARCH_RESULTS = 6;

const toSource = (hit: KnowledgeHit): MessageSource => ({
  document_id: hit.document_id,
  document_name: hit.document_name,
  chunk_id: hit.chunk_id,
  score: hit.score,
  ...(hit.page != null ? { page: hit.page } : {}),
  ...(hit.rerank_score !== undefined ? { rerank_score: hit.rerank_score } : {}),
});

/** Best first: by reranker score where both have one, reranked before not, else by fused score. */
const bySourceRank = (a: MessageSource, b: MessageSource) => {
  if (a.rerank_score !== undefined && b.rerank_score !== undefined) return b.rerank_score - a.rerank_score;
  if (a.rerank_score !== undefined || b.rerank_score !== undefined) return a.rerank_score === undefined ? 1 : -1;
  return b.score - a.score;
};

function knowledgeTools(search: (query: string) => Promise<KnowledgeHit[]>, sources: Map<string, MessageSource>): ToolSet {
  return {
    // A tool as the AI SDK's `tool()` makes it (it returns its argument; not imported, so the AI
    // SDK loads at the first model call: models/providers.ts).
    search_knowledge_base: {
      description:
        'Search the knowledge bases attached to this chat. Use it for questions about the documents; cite what you use.',
      inputSchema: z.object({ query: z.string().min(1).max(1000).describe('What to look for, in a few words') }),
      execute: async ({ query }: { query: string }) => {
        const hits = (await search(query)).slice(0, SEARCH_RESULTS);
        for (const hit of hits) {
          const known = sources.get(hit.chunk_id);
          if (!known || known.score < hit.score) sources.set(hit.chunk_id, toSource(hit));
        }
        return hits.map((hit) => ({
          chunk_id: hit.chunk_id,
          document: hit.document_name,
          page: hit.page ?? null,
          ...(hit.page != null ? { page_unit: hit.page_unit ?? 'page' } : {}),
          content: hit.content,
        }));
      },
    },
  };
}

/**
 * Streams one model run and turns the AI SDK's parts into our events. Both frameworks share it;
 * they differ only in the tools offered and the number of steps allowed.
 */
async function runStream(input: AgentInput, tools: ToolSet | undefined, maxSteps: number): Promise<StreamedText> {
  // Without tools there is one model call and nothing for streamText's stages to do.
  if (!tools && supportsPlainStream(input.model)) {
    try {
      return await streamPlainText({ ...input, onText: (text) => input.onEvent({ type: 'delta', text }) });
    } catch (error) {
      throw new ModelCallError(error);
    }
  }
  const { stepCountIs, streamText } = await aiSdk();
  const result = streamText({
    model: input.model,
    system: input.system,
    messages: input.messages,
    ...input.call.settings,
    providerOptions: input.call.providerOptions,
    abortSignal: input.abortSignal,
    maxRetries: 1,
    // Errors arrive as `error` parts below and the caller logs them; the SDK's default handler
    // would also print each one to the console, outside the service's logger.
    onError: () => undefined,
    ...(tools ? { tools, stopWhen: stepCountIs(maxSteps) } : {}),
  });

  let text = '';
  let usage: AgentResult['usage'] = null;
  let stepUsage = { inputTokens: 0, outputTokens: 0 };
  let stopped = false;
  const toolsStarted = new Set<string>();
  const toolsFinished = new Set<string>();
  const startTool = (id: string, name: string) => {
    if (toolsStarted.has(id)) return;
    toolsStarted.add(id);
    input.onEvent({ type: 'tool', id, name, status: 'started' });
  };
  const finishTool = (id: string, name: string) => {
    startTool(id, name);
    if (toolsFinished.has(id)) return;
    toolsFinished.add(id);
    input.onEvent({ type: 'tool', id, name, status: 'finished' });
  };

  for await (const part of result.fullStream) {
    switch (part.type) {
      case 'text-delta':
        if (part.text) {
          text += part.text;
          input.onEvent({ type: 'delta', text: part.text });
        }
        break;
      case 'tool-input-start':
        startTool(part.id, part.toolName);
        break;
      case 'tool-call':
        startTool(part.toolCallId, part.toolName);
        break;
      case 'tool-result':
      case 'tool-error':
        finishTool(part.toolCallId, part.toolName);
        break;
      case 'finish-step':
        stepUsage = {
          inputTokens: stepUsage.inputTokens + (part.usage.inputTokens ?? 0),
          outputTokens: stepUsage.outputTokens + (part.usage.outputTokens ?? 0),
        };
        usage = { ...stepUsage };
        break;
      case 'finish':
        usage = { inputTokens: part.totalUsage.inputTokens ?? 0, outputTokens: part.totalUsage.outputTokens ?? 0 };
        break;
      case 'abort':
        stopped = true;
        break;
      case 'error':
        if (input.abortSignal.aborted) stopped = true;
        else throw new ModelCallError(part.error);
        break;
      default:
        break;
    }
  }
  if (input.abortSignal.aborted) stopped = true;
  return { text, usage, stopped };
}

/**
 * The system prompt of a `direct` run with retrieved chunks: the chat's own prompt first, then the
 * excerpts, numbered, each with its document (and page) so the model can cite them.
 */
export function withKnowledgeContext(system: string | undefined, hits: KnowledgeHit[]): string | undefined {
  if (!hits.length) return system;
  const excerpts = hits.map((hit, index) => {
    // The unit comes from the format ingestion read (a sheet, slide or chapter reuses `page`).
    const where = hit.page ? `${hit.document_name}, ${hit.page_unit ?? 'page'} ${hit.page}` : hit.document_name;
    return `[${index + 1}] (${where})\n${hit.content}`;
  });
  const context =
    'Excerpts from the knowledge bases attached to this chat, retrieved for the latest message. ' +
    'Use them when they are relevant and cite them by number.\n\n' +
    excerpts.join('\n\n');
  return system ? `${system}\n\n${context}` : context;
}

/**
 * `direct`: one model call, no tools. With knowledge bases attached it searches them once for the
 * user's message, before the call, puts the best chunks into the system prompt and cites them.
 */
const direct: AgentFramework = {
  name: 'direct',
  searchesThroughTools: false,
  async run(input) {
    const query = input.query.trim();
    const hits = input.searchKnowledge && query ? (await input.searchKnowledge(query)).slice(0, SEARCH_RESULTS) : [];
    const outcome = await runStream({ ...input, system: withKnowledgeContext(input.system, hits) }, undefined, 1);
    return { ...outcome, sources: hits.map(toSource).sort(bySourceRank) };
  },
};

/** `tools` (default): a multi-step tool loop with `search_knowledge_base` when knowledge is attached. */
const tools: AgentFramework = {
  name: 'tools',
  searchesThroughTools: true,
  async run(input) {
    const sources = new Map<string, MessageSource>();
    const toolSet = input.searchKnowledge ? knowledgeTools(input.searchKnowledge, sources) : undefined;
    const outcome = await runStream(input, toolSet, MAX_TOOL_STEPS);
    return { ...outcome, sources: [...sources.values()].sort(bySourceRank) };
  },
};

const frameworks = new Map<AgentFrameworkName, AgentFramework>([
  [direct.name, direct],
  [tools.name, tools],
]);

export function agentFramework(name: string): AgentFramework {
  return frameworks.get(name as AgentFrameworkName) ?? tools;
}
