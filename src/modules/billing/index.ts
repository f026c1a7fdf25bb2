/**
 * Public API of the billing module: what other modules may import (dependency-cruiser's no-reach-in
 * rule allows nothing else). Credit reservations (`CreditService`, `Reservation`), the plans and which models they include,
 * and the billing state of a workspace (`resolveBillingState`). Every model call passes the one
 * billing gate, `CreditService.admit({ workspace, model, estimate })`, which raises the one
 * `model_not_in_plan` error (`modelNotInPlan`, also used when a chat picks a model).
 *
 * Inside, one folder per feature: credit/ (the ledger and the gate), plan/ (plans, a workspace's
 * billing state, overrides, the plan routes), checkout/, webhook/ (the provider's events and their
 * inbox), usage/ (analytics). At the root what several share: the tables, the mirrored
 * subscriptions and catalog (written by webhook/, read by checkout/ and plan/), the payment
 * provider, the errors.
 */
export { modelNotInPlan } from './billing.errors.js';
export { type Admission, type CreditService, type Reservation } from './credit/credit.service.js';
// The hold as statement text, for a write that must happen only with the credit held (CreditService.admitWith).
export { holdCtes, type HoldValues } from './credit/credit.repo.js';
export { type Plan, planIncludesModel, type Plans } from './plan/plans.js';
export { createPlanModelRules, resolveBillingState } from './plan/billing-state.js';
