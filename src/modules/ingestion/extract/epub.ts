/**
 * EPUB: the package document named by META-INF/container.xml, its spine in reading order, one page
 * per spine item (`page` is the chapter's position in the spine, 1-based), each XHTML chapter read
 * as a whole body by the HTML extractor's DOM walker (no Readability: a chapter has no chrome).
 * Title from the package's dc:title. Encrypted (DRM) books are refused as password-protected.
 */
import { numberedPages } from './decode.js';
import { bodyText } from './html.js';
import { type ExtractedDocument, ExtractionError, type ExtractionLimits } from './types.js';
import { attr, firstElementText, walkXml } from './xml.js';
import { openZip, resolvePath } from './zip.js';

const CORRUPT = 'This EPUB book could not be read. It may be damaged or not an .epub file.';

const CHAPTER_TYPES = new Set(['application/xhtml+xml', 'text/html', 'application/x-dtbook+xml']);

export function extractEpub(bytes: Buffer, limits: ExtractionLimits): ExtractedDocument {
  const zip = openZip(bytes, limits, CORRUPT);
  if (zip.text('META-INF/encryption.xml')?.includes('EncryptedData')) {
    throw new ExtractionError(
      'password_protected',
      'This EPUB book is protected by DRM and cannot be read. Upload a copy without DRM.',
      'EPUB with META-INF/encryption.xml',
    );
  }
  let packagePath: string | undefined;
  walkXml(zip.text('META-INF/container.xml') ?? '', {
    open(name, attributes) {
      if (name === 'rootfile' && !packagePath && (attributes['media-type'] ?? 'application/oebps-package+xml') === 'application/oebps-package+xml') {
        packagePath = attributes['full-path'];
      }
    },
  });
  packagePath ??= zip.entries.find((entry) => entry.name.endsWith('.opf'))?.name;
  const opf = packagePath ? zip.text(packagePath) : undefined;
  if (!packagePath || opf === undefined) throw new ExtractionError('corrupt_file', CORRUPT, 'EPUB without a package document');

  const manifest = new Map<string, { href: string; type: string }>();
  const spine: string[] = [];
  walkXml(opf, {
    open(name, attributes) {
      if (name === 'item' && attributes.id && attributes.href) {
        manifest.set(attributes.id, { href: resolvePath(packagePath!, attributes.href), type: attributes['media-type'] ?? '' });
      } else if (name === 'itemref') {
        const id = attr(attributes, 'idref');
        if (id) spine.push(id);
      }
    },
  });
  const chapters = spine
    .map((id) => manifest.get(id))
    .filter((item): item is { href: string; type: string } => item !== undefined && (CHAPTER_TYPES.has(item.type) || /\.x?html?$/i.test(item.href)));
  const result = numberedPages(
    chapters.map(({ href }) => () => {
      const xhtml = zip.text(href);
      return xhtml === undefined ? undefined : bodyText(xhtml);
    }),
    limits,
  );
  const title = firstElementText(opf, 'title');
  return { ...(title ? { title } : {}), ...result };
}
