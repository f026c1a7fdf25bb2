/** What XLSX and PPTX share: the package relationships, the main part and the title in docProps/core.xml. */
import { resolvePath, type ZipArchive } from './zip.js';
import { firstElementText, relationships } from './xml.js';

/** The relationships file of a part: "xl/workbook.xml" → "xl/_rels/workbook.xml.rels". */
export function relsPathOf(part: string): string {
  const slash = part.lastIndexOf('/');
  return `${part.slice(0, slash + 1)}_rels/${part.slice(slash + 1)}.rels`;
}

export function partRelationships(zip: ZipArchive, part: string) {
  return relationships(zip.text(relsPathOf(part)), (target) => resolvePath(part, target));
}

/** The package's main part (the officeDocument relationship), else `fallback`. */
export function mainPart(zip: ZipArchive, fallback: string): string {
  const rels = relationships(zip.text('_rels/.rels'), (target) => resolvePath('', target));
  for (const { target, type } of rels.values()) if (type.endsWith('/officeDocument') && zip.has(target)) return target;
  return fallback;
}

export function coreTitle(zip: ZipArchive): string | undefined {
  return firstElementText(zip.text('docProps/core.xml'), 'title');
}
