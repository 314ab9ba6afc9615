import { describe, expect, it } from 'vitest';
import history, { historyKey } from '../src/widgets/history';

function model(state: Record<string, any>) {
  const sent: Record<string, unknown>[] = [];
  return { sent, get: (name: string) => state[name], send: (c: Record<string, unknown>) => sent.push(c), on: () => undefined, off: () => undefined } as any;
}

const ENTRIES = [
  { index: 0, label: 'start', current: false },
  { index: 1, label: 'smem_ring.num_stages 4 -> 5', current: true }
];

describe("the Studio's history", () => {
  it('lists the entries with the current one marked, and undo, redo and revert go to Python', () => {
    const m = model({ entries: ENTRIES, hidden_before: 0, can_undo: true, can_redo: false });
    const el = document.createElement('div');
    history.render({ model: m, el });
    const items = [...el.querySelectorAll<HTMLElement>('.tslab-history-entry')];
    expect(items.map(i => i.textContent)).toEqual(['#0 start', '#1 smem_ring.num_stages 4 -> 5']);
    expect(items[1].classList.contains('tslab-history-current')).toBe(true);
    expect(el.querySelector<HTMLButtonElement>('.tslab-history-redo')!.disabled).toBe(true);
    el.querySelector<HTMLButtonElement>('.tslab-history-undo')!.click();
    items[0].click();
    items[1].click();  // the current entry: nothing to do
    expect(m.sent).toEqual([{ kind: 'undo' }, { kind: 'revert', index: 0 }]);
  });

  it('undoes on Ctrl+Z in the Studio, and in a text field once what was typed there is applied', () => {
    const studio = document.createElement('div');
    studio.className = 'tslab-studio';
    const field = document.createElement('input');
    const swimlane = document.createElement('div');
    swimlane.tabIndex = 0;
    const el = document.createElement('div');
    studio.append(field, swimlane, el);
    document.body.appendChild(studio);
    const m = model({ entries: ENTRIES, hidden_before: 3, can_undo: true, can_redo: true });
    const dispose = history.render({ model: m, el });
    expect(el.querySelector('.tslab-history-hidden')!.textContent).toContain('3 earlier entries');
    const press = (target: HTMLElement, init: KeyboardEventInit) => target.dispatchEvent(new KeyboardEvent('keydown', { bubbles: true, cancelable: true, ...init }));
    press(swimlane, { key: 'z', ctrlKey: true });
    press(swimlane, { key: 'Z', ctrlKey: true, shiftKey: true });
    press(document.body, { key: 'z', ctrlKey: true });  // outside the Studio
    expect(m.sent).toEqual([{ kind: 'undo' }, { kind: 'redo' }]);
    // typing not applied yet: the field's own text undo
    field.value = '1';
    field.dispatchEvent(new Event('input', { bubbles: true }));
    const typed = press(field, { key: 'z', ctrlKey: true });
    expect(m.sent.length).toBe(2);
    expect(typed).toBe(true); // not cancelled: the browser undoes the typing
    // Enter applied it: the field shows the design, and Ctrl+Z with the cursor still there is the Studio's undo
    press(field, { key: 'Enter' });
    const applied = press(field, { key: 'z', ctrlKey: true });
    expect(m.sent).toEqual([{ kind: 'undo' }, { kind: 'redo' }, { kind: 'undo' }]);
    expect(applied).toBe(false); // cancelled: the box keeps what the design holds, not the browser's undo
    // leaving a field applies its typing too
    field.dispatchEvent(new Event('input', { bubbles: true }));
    field.dispatchEvent(new FocusEvent('focusout', { bubbles: true }));
    press(field, { key: 'y', ctrlKey: true });
    expect(m.sent.length).toBe(4);
    dispose();
    press(swimlane, { key: 'z', ctrlKey: true });
    expect(m.sent.length).toBe(4);
    studio.remove();
  });

  it('after a click on a part of the Studio that takes no focus, undoes there and keeps the key from the notebook', () => {
    const notebook = document.createElement('div');
    const cellEditor = document.createElement('div');
    cellEditor.className = 'cm-editor';
    cellEditor.tabIndex = 0;
    const studio = document.createElement('div');
    studio.className = 'tslab-studio';
    const map = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    const el = document.createElement('div');
    studio.append(map, el);
    notebook.append(cellEditor, studio);
    document.body.appendChild(notebook);
    const reachedNotebook: string[] = [];
    notebook.addEventListener('keydown', () => reachedNotebook.push('key'));
    const m = model({ entries: ENTRIES, hidden_before: 0, can_undo: true, can_redo: true });
    const dispose = history.render({ model: m, el });
    map.dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
    expect(studio.getAttribute('data-lm-suppress-shortcuts')).toBe('true');
    expect(studio.getAttribute('tabindex')).toBe('-1');
    // The focus stayed in the cell's editor: the key is the Studio's all the same, and stops there.
    cellEditor.dispatchEvent(new KeyboardEvent('keydown', { key: 'z', ctrlKey: true, bubbles: true, cancelable: true }));
    expect(m.sent).toEqual([{ kind: 'undo' }]);
    expect(reachedNotebook).toEqual([]);
    // A click in the cell's editor gives the editor its own undo back.
    cellEditor.dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
    cellEditor.dispatchEvent(new KeyboardEvent('keydown', { key: 'z', ctrlKey: true, bubbles: true, cancelable: true }));
    expect(m.sent).toEqual([{ kind: 'undo' }]);
    expect(reachedNotebook).toEqual(['key']);
    dispose();
    notebook.remove();
  });

  it('reads the usual keys', () => {
    const key = (init: KeyboardEventInit) => historyKey(new KeyboardEvent('keydown', init));
    expect([key({ key: 'z', metaKey: true }), key({ key: 'y', ctrlKey: true }), key({ key: 'z' }), key({ key: 'z', ctrlKey: true, altKey: true })]).toEqual(['undo', 'redo', null, null]);
  });
});
