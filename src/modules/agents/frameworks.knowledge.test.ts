import { describe, expect, it } from 'vitest';
import { withKnowledgeContext } from './frameworks.js';

describe('withKnowledgeContext', () => {
  it('names what a chunk page counts: page, sheet, slide or chapter', () => {
    const hit = (document_name: string, page: number | null) => ({ chunk_id: 'c', document_id: 'd', document_name, content: 'x', score: 1, page });
    const prompt = withKnowledgeContext(undefined, [
      hit('Handbook.pdf', 4),
      hit('Budget.xlsx', 2),
      hit('Deck.PPTX', 3),
      hit('Talk.odp', 1),
      hit('Novel.epub', 7),
      hit('Notes.md', null),
    ])!;
    expect(prompt).toContain('[1] (Handbook.pdf, page 4)');
    expect(prompt).toContain('[2] (Budget.xlsx, sheet 2)');
    expect(prompt).toContain('[3] (Deck.PPTX, slide 3)');
    expect(prompt).toContain('[4] (Talk.odp, slide 1)');
    expect(prompt).toContain('[5] (Novel.epub, chapter 7)');
    expect(prompt).toContain('[6] (Notes.md)\nx');
  });
});
