/** DOCX (mammoth): the raw text, one page. */
import mammoth from 'mammoth';
import { singlePage } from './decode.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';
import { openZip } from './zip.js';

const CORRUPT = 'This Word document could not be read. It may be damaged, password-protected or not a .docx file.';

export async function extractDocx(bytes: Buffer, limits: ExtractionLimits): Promise<ExtractedDocument> {
  // mammoth unzips with JSZip, which trusts the sizes the archive declares: the archive limits are
  // checked, and every entry inflated once within its declared size, before it gets the bytes.
  openZip(bytes, limits, CORRUPT).verify();
  let value: string;
  try {
    ({ value } = await mammoth.extractRawText({ buffer: bytes }));
  } catch (error) {
    throw new ExtractionError(
      'corrupt_file',
      CORRUPT,
      `DOCX could not be read: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return singlePage(value, limits);
}
