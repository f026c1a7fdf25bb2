/** PDF (unpdf / pdf.js): one page per PDF page. */
import { getDocumentProxy } from 'unpdf';
import { clip, normalizeWhitespace } from './decode.js';
import { type ExtractedDocument, type ExtractedPage, ExtractionError, type ExtractionLimits } from './types.js';

export async function extractPdf(bytes: Buffer, limits: ExtractionLimits): Promise<ExtractedDocument> {
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // A copy: pdf.js may transfer (detach) the buffer it is given.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false, stopAtErrors: false });
  } catch (error) {
    const name = (error as { name?: unknown } | null)?.name;
    if (name === 'PasswordException') {
      throw new ExtractionError(
        'password_protected',
        'This PDF is password-protected. Remove the password and upload it again.',
        `PDF is encrypted: ${String((error as Error).message)}`,
        { cause: error },
      );
    }
    throw new ExtractionError(
      'corrupt_file',
      'This PDF could not be read. It may be damaged or password-protected.',
      `PDF could not be opened: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  try {
    const pages: ExtractedPage[] = [];
    let budget = limits.maxChars;
    let truncated = pdf.numPages > limits.maxPages;
    const last = Math.min(pdf.numPages, limits.maxPages);
    for (let number = 1; number <= last; number++) {
      if (budget <= 0) {
        truncated = true;
        break;
      }
      const page = await pdf.getPage(number);
      const content = await page.getTextContent();
      let raw = '';
      for (const item of content.items) {
        if ('str' in item) raw += item.str + (item.hasEOL ? '\n' : '');
      }
      page.cleanup();
      const { text, clipped } = clip(normalizeWhitespace(raw), budget);
      if (clipped) truncated = true;
      budget -= text.length;
      pages.push({ page: number, text });
    }
    let title: string | undefined;
    try {
      const meta = await pdf.getMetadata();
      const raw = (meta.info as { Title?: unknown } | undefined)?.Title;
      if (typeof raw === 'string' && normalizeWhitespace(raw)) title = normalizeWhitespace(raw);
    } catch {
      // Metadata is optional.
    }
    return { ...(title ? { title } : {}), pages, ...(truncated ? { truncated: true } : {}) };
  } catch (error) {
    throw new ExtractionError(
      'corrupt_file',
      'This PDF could not be read. It may be damaged or password-protected.',
      `PDF text extraction failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}
