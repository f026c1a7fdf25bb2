/**
 * Public API of the billing module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Credit reservations (`CreditService`, `Reservation`), the plans and which models they include,
 * and the billing state of a workspace (`resolveBillingState`).
 */
export { type CreditService, type Reservation } from './credit.service.js';
export { planIncludesModel, type Plans } from './plans.js';
export { resolveBillingState } from './state.js';
