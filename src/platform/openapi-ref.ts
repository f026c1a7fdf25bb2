/** A JSON object of the OpenAPI document, and a reference to one of its components. */
export type Json = Record<string, unknown>;
export const ref = (kind: 'schemas' | 'headers' | 'parameters' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });
