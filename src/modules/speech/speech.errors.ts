import {
  AppError,
  fieldError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  ValidationError,
} from '../../platform/errors.js';
import { ACCEPTED_FORMATS_TEXT } from './audio.js';

export const speechErrors = {
  audioTooLarge: () =>
    new PayloadTooLargeError('The audio file is larger than 25 MB (26,214,400 bytes).', 'audio_too_large'),
  unsupportedAudioType: () =>
    fieldError(
      'audio_file',
      `Unsupported audio type: send ${ACCEPTED_FORMATS_TEXT} audio.`,
      'unsupported_audio_type',
    ),
  notMultipart: () =>
    new AppError(
      415,
      'unsupported_media_type',
      'Send the audio as multipart/form-data with the fields audio_file, workspace_id and language.',
    ),
  missingAudio: () => fieldError('audio_file', 'This field is required: the audio file to transcribe.'),
  missingWorkspace: () => fieldError('workspace_id', 'This field is required.'),
  unexpectedFile: (field: string) =>
    new ValidationError(`Unexpected file field "${field}"; send the audio as "audio_file".`, {
      [field]: ['Send the audio in the field "audio_file".'],
    }),
  repeatedField: (field: string) => fieldError(field, `Send "${field}" once.`),
  invalidAudioLanguage: () =>
    fieldError('language', 'language must be an ISO 639-1 code such as "en" or "fr".', 'invalid_language'),
  invalidTargetLanguage: () =>
    fieldError(
      'target_language',
      'target_language must be an English language name (such as "French") or a BCP 47 tag (such as "fr", "pt-BR", "zh-Hant").',
      'invalid_language',
    ),
  transcriptionNotConfigured: () =>
    new ServiceUnavailableError(
      'Transcription is not configured on this server: set TRANSCRIPTION_MODEL and its provider.',
      'model_not_configured',
    ),
  translationModelInvalid: (spec: string) =>
    new ServiceUnavailableError(
      `TRANSLATION_MODEL '${spec}' must name a chat model of the catalog with its provider.`,
      'model_not_configured',
    ),
  // 502: the upstream model failed; the detail stays generic (the cause is in the log).
  transcriptionFailed: () =>
    new AppError(502, 'transcription_failed', 'The audio could not be transcribed. Please try again.'),
  translationFailed: () =>
    new AppError(502, 'translation_failed', 'The text could not be translated. Please try again.'),
};
