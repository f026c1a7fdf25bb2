import type { FieldErrors } from './errors.js';

/**
 * The one place zod issues become text: the `errors` of a 400 body (`fieldErrorsOf`) and one
 * line for a log or a startup failure (`describeIssues`). zod's `z.flattenError` is not used:
 * it keys nested fields by their first segment only, and the API, the configuration errors and
 * the tests name a field by its full dotted path (`models.0.provider`), which
 * `z.prettifyError` writes differently (`models[0].provider`).
 */
type Issue = { readonly path: readonly PropertyKey[]; readonly message: string };

/** The key of an issue about the whole input rather than one field. */
export const NON_FIELD_ERRORS = 'non_field_errors';

const dottedPath = (issue: Issue) => issue.path.map(String).join('.');

/** `{ 'items.0.name': [messages] }`, at most `limit` issues (bodies echo no unbounded list). */
export function fieldErrorsOf(issues: readonly Issue[], limit = Number.POSITIVE_INFINITY): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues.slice(0, limit)) (errors[dottedPath(issue) || NON_FIELD_ERRORS] ??= []).push(issue.message);
  return errors;
}

/** One `path: message` per issue (`items.0.name: Required`; `(root): ...` for the whole input). */
export function issueLines(issues: readonly Issue[]): string[] {
  return issues.map((i) => `${dottedPath(i) || '(root)'}: ${i.message}`);
}

/** The issues on one line, for an Error's message or a log. */
export function describeIssues(issues: readonly Issue[]): string {
  return issueLines(issues).join('; ');
}
