/**
 * Public API of the knowledge-bases module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Who may change a document of a knowledge base (`canChangeDocument`).
 */
export { canChangeDocument } from './knowledge-bases.policy.js';
