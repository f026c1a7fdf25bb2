import { describe, expect, it } from 'vitest';
import type { KnowledgeHit } from './knowledge-port.js';
import { withKnowledgeContext } from './frameworks.js';

describe('withKnowledgeContext', () => {
  it("names what a chunk's page counts by the hit's page unit (from ingestion), not the file name", () => {
    const hit = (document_name: string, page: number | null, page_unit?: KnowledgeHit['page_unit']): KnowledgeHit => ({
      chunk_id: 'c',
      document_id: 'd',
      document_name,
      content: 'x',
      score: 1,
      page,
      ...(page_unit !== undefined ? { page_unit } : {}),
    });
    const prompt = withKnowledgeContext(undefined, [
      hit('Handbook.pdf', 4, 'page'),
      hit('export', 2, 'sheet'),
      hit('Deck (final)', 3, 'slide'),
      hit('Budget.xlsx', 1, 'page'),
      hit('Novel.epub', 7, 'chapter'),
      hit('Notes.md', null),
      hit('Old.pptx', 5),
    ])!;
    expect(prompt).toContain('[1] (Handbook.pdf, page 4)');
    expect(prompt).toContain('[2] (export, sheet 2)');
    expect(prompt).toContain('[3] (Deck (final), slide 3)');
    // A PDF someone named .xlsx: the format read decides.
    expect(prompt).toContain('[4] (Budget.xlsx, page 1)');
    expect(prompt).toContain('[5] (Novel.epub, chapter 7)');
    expect(prompt).toContain('[6] (Notes.md)\nx');
    // No unit known: a page.
    expect(prompt).toContain('[7] (Old.pptx, page 5)');
  });
});
