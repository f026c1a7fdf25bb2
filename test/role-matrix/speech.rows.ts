import { multipartBody, wavFile } from '../support/multipart.js';
import { type MatrixRow, statuses } from './world.js';

// Both routes call a model (the fake model server the matrix starts, through modelEnv): every
// current member may, anyone else gets 403.
const members = statuses(200, 200, 200, 403, 403);

export const speechRows: MatrixRow[] = [
  {
    route: 'POST /api/transcribe-audio/',
    request: (w) => {
      const { payload, headers } = multipartBody([
        { name: 'workspace_id', value: w.workspace.id },
        { name: 'audio_file', filename: 'note.wav', contentType: 'audio/wav', data: wavFile(32_044) },
      ]);
      return { url: '/api/transcribe-audio/', body: payload, headers };
    },
    expect: members,
  },
  {
    route: 'POST /api/workspaces/:ws/translate/',
    request: (w) => ({ url: `/api/workspaces/${w.workspace.id}/translate/`, body: { text: 'Hello', target_language: 'French' } }),
    expect: members,
  },
];
