/**
 * Public API of the billing module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Credit reservations (`CreditService`, `Reservation`), the plans and which models they include,
 * and the billing state of a workspace (`resolveBillingState`). Every model call passes the one
 * billing gate, `CreditService.admit({ workspace, model, estimate })`, which raises the one
 * `model_not_in_plan` error (`modelNotInPlan`, also used when a chat picks a model).
 */
export { modelNotInPlan } from './billing.errors.js';
export { type CreditService, type Reservation } from './credit.service.js';
export { planIncludesModel, type Plans } from './plans.js';
export { createPlanModelRules, resolveBillingState } from './state.js';
