/** DOCX (mammoth): the raw text, one page. */
import mammoth from 'mammoth';
import { singlePage } from './decode.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';

export async function extractDocx(bytes: Buffer, limits: ExtractionLimits): Promise<ExtractedDocument> {
  let value: string;
  try {
    ({ value } = await mammoth.extractRawText({ buffer: bytes }));
  } catch (error) {
    throw new ExtractionError(
      'corrupt_file',
      'This Word document could not be read. It may be damaged, password-protected or not a .docx file.',
      `DOCX could not be read: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return singlePage(value, limits);
}
