/**
 * Public API of the agents module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). The agent frameworks a chat can run (`agentFramework`), their event type, the knowledge-search
 * port they call (`KnowledgeSearch`, implemented by knowledge-bases), and `ModelCallError`.
 */
export { type KnowledgeHit, type KnowledgeSearch, type MessageSource } from './knowledge-port.js';
export { ModelCallError, agentFramework, type AgentEvent } from './frameworks.js';
export { agentFrameworkNames } from './frameworks.names.js';
