import { namedSchema, type OperationDocs } from '../../platform/openapi.js';
import { translateBody, transcriptionOut, translationOut } from './speech.schemas.js';

namedSchema(transcriptionOut, 'Transcription', {
  description: 'The text of an audio file.',
  example: {
    text: 'Hello, I would like to ask about the refund for order 1042.',
    language: 'en',
    duration: 4.2,
    segments: [{ start: 0, end: 4.2, text: 'Hello, I would like to ask about the refund for order 1042.' }],
  },
});
namedSchema(translateBody, 'TranslationRequest', {
  description: 'Text to translate and the target language (a name or a BCP 47 tag).',
  example: { text: 'Our refund window is 30 days.', target_language: 'French' },
});
namedSchema(translationOut, 'Translation', {
  description: 'A translation.',
  example: { translated_text: 'Notre délai de remboursement est de 30 jours.', target_language: 'fr', model: 'gpt-4o-mini' },
});

export const speechDocs: OperationDocs = {
  'POST /api/transcribe-audio/': {
    operationId: 'speech_transcribe',
    summary: 'Transcribe an audio file',
    description:
      'Any member of `workspace_id` (403 `not_workspace_member`); the transcription is charged to its credit (402 ' +
      '`credit_exhausted`, `model_not_in_plan`). `multipart/form-data` with the fields first, then `audio_file` (at ' +
      'most 26,214,400 bytes: 413 `audio_too_large`; mp3, mpeg, mpga, mp4, m4a, wav, webm, ogg or flac: 400 ' +
      '`unsupported_audio_type`); another body type is 415 `unsupported_media_type`. 503 `model_not_configured` ' +
      'when no transcription model is set up; 502 `transcription_failed`. THROTTLE_TRANSCRIPTIONS per user (429).',
    errors: {
      400: ['invalid_language', 'unsupported_audio_type'],
      402: ['credit_exhausted', 'model_not_in_plan'],
      403: ['not_workspace_member'],
      409: ['workspace_archived'],
      413: ['audio_too_large'],
      502: ['transcription_failed'],
      503: ['model_not_configured'],
    },
    throttled: true,
    requestContent: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          required: ['workspace_id', 'audio_file'],
          properties: {
            workspace_id: { type: 'string', format: 'uuid', description: 'The workspace whose credit pays.' },
            language: { type: 'string', description: 'ISO 639-1 hint, such as `en`.', example: 'en' },
            audio_file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The audio, last part.' },
          },
        },
        encoding: { audio_file: { contentType: 'audio/*' } },
      },
    },
  },
  'POST /api/workspaces/:ws/translate/': {
    operationId: 'speech_translate',
    summary: 'Translate text',
    description:
      'Any member of the workspace; charged to its credit (402 `credit_exhausted`, `model_not_in_plan`). An unknown ' +
      'target language is 400 `invalid_language`. 503 `model_not_configured`; 502 `translation_failed`. ' +
      'THROTTLE_TRANSLATIONS per user (429).',
    errors: {
      400: ['invalid_language'],
      402: ['credit_exhausted', 'model_not_in_plan'],
      403: ['not_workspace_member'],
      409: ['workspace_archived'],
      502: ['translation_failed'],
      503: ['model_not_configured'],
    },
    throttled: true,
  },
};
