/**
 * The agent frameworks a chat can select. `tools` runs a multi-step tool loop (with
 * `search_knowledge_base` when knowledge bases are attached); `direct` makes one model call.
 */
export const agentFrameworkNames = ['tools', 'direct'] as const;
export type AgentFrameworkName = (typeof agentFrameworkNames)[number];
export const defaultAgentFramework: AgentFrameworkName = 'tools';
