import { z } from 'zod';
import { pathId } from '../../platform/ids.js';

export const MAX_TRANSLATION_CHARS = 20_000;

export const transcriptionSegment = z.object({ start: z.number(), end: z.number(), text: z.string() });

export const transcriptionOut = z.object({
  text: z.string(),
  /** ISO 639-1: as the provider detected it, else the caller's hint, else null. */
  language: z.string().nullable(),
  /** Seconds, when the provider reports it. */
  duration: z.number().optional(),
  segments: z.array(transcriptionSegment).optional(),
});
export type TranscriptionOut = z.output<typeof transcriptionOut>;

export const translatePathParams = z.object({ ws: pathId });

export const translateBody = z.object({
  text: z
    .string()
    .min(1, 'text must not be empty.')
    .max(MAX_TRANSLATION_CHARS, `text is at most ${MAX_TRANSLATION_CHARS.toLocaleString('en-US')} characters.`)
    .refine((text) => text.trim().length > 0, 'text must not be blank.'),
  // Checked against CLDR in the service (400 invalid_language); bounded here.
  target_language: z.string().min(1, 'target_language is required.').max(64, 'target_language is at most 64 characters.'),
});
export type TranslateInput = z.output<typeof translateBody>;

export const translationOut = z.object({
  translated_text: z.string(),
  /** Canonical BCP 47 tag of the target: "French" → "fr", "pt-br" → "pt-BR". */
  target_language: z.string(),
  /** Catalog id of the model that translated. */
  model: z.string(),
});
export type TranslationOut = z.output<typeof translationOut>;
