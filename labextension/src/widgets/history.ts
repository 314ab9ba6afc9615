/**
 * The live host of a Studio's history (`tslab.widgets.HistoryView`): undo and redo buttons over the newest
 * entries, the current one marked, any other one a click away. Ctrl+Z (Cmd+Z) undoes and Ctrl+Shift+Z or
 * Ctrl+Y redoes while the keyboard is in the Studio, except in a text field (whose own undo is the one meant).
 */

import { h } from '../views/dom';

export interface HistoryEntry {
  index: number;
  label: string;
  current: boolean;
}

export interface HistoryViewModel {
  get(name: 'entries'): HistoryEntry[];
  get(name: 'hidden_before'): number;
  get(name: 'can_undo' | 'can_redo'): boolean;
  send(content: Record<string, unknown>): void;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

const TEXT_FIELDS = 'input, textarea, select, [contenteditable="true"], .cm-editor';

/** What a keydown asks of the history: "undo", "redo" or nothing. */
export function historyKey(event: KeyboardEvent): 'undo' | 'redo' | null {
  if (!(event.ctrlKey || event.metaKey) || event.altKey) {
    return null;
  }
  const key = event.key.toLowerCase();
  if (key === 'z') {
    return event.shiftKey ? 'redo' : 'undo';
  }
  return key === 'y' && !event.shiftKey ? 'redo' : null;
}

function render({ model, el }: { model: HistoryViewModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-history');
  el.setAttribute('data-lm-suppress-shortcuts', 'true');
  const send = (kind: string, index?: number) => model.send(index === undefined ? { kind } : { kind, index });
  const draw = () => {
    const undo = h('button', { type: 'button', class: 'tslab-history-undo', title: 'undo the last edit (Ctrl+Z)' }, '\u21b6 undo');
    const redo = h('button', { type: 'button', class: 'tslab-history-redo', title: 'redo (Ctrl+Shift+Z)' }, 'redo \u21b7');
    (undo as HTMLButtonElement).disabled = !model.get('can_undo');
    (redo as HTMLButtonElement).disabled = !model.get('can_redo');
    undo.addEventListener('click', () => send('undo'));
    redo.addEventListener('click', () => send('redo'));
    const hidden = model.get('hidden_before');
    const items = model.get('entries').map(entry => {
      const item = h(
        'li',
        { class: entry.current ? 'tslab-history-entry tslab-history-current' : 'tslab-history-entry', title: entry.current ? 'the design on show' : 'click to make this design current again', 'data-index': entry.index },
        h('span', { class: 'tslab-history-number' }, `#${entry.index}`),
        ` ${entry.label}`
      );
      if (!entry.current) {
        item.addEventListener('click', () => send('revert', entry.index));
      }
      return item;
    });
    const parts = [h('div', { class: 'tslab-history-bar' }, h('b', {}, 'history'), undo, redo)];
    if (hidden) {
      parts.push(h('div', { class: 'tslab-history-hidden' }, `${hidden} earlier entr${hidden === 1 ? 'y' : 'ies'} (studio.history)`));
    }
    el.replaceChildren(...parts, h('ol', { class: 'tslab-history-list' }, ...items));
  };
  const onKey = (event: KeyboardEvent) => {
    const action = historyKey(event);
    const target = event.target as HTMLElement | null;
    const scope = el.closest('.tslab-studio') ?? el;
    if (!action || !target || !scope.contains(target) || target.closest(TEXT_FIELDS)) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    send(action);
  };
  document.addEventListener('keydown', onKey, true);
  const events = ['change:entries', 'change:can_undo', 'change:can_redo', 'change:hidden_before'];
  events.forEach(e => model.on(e, draw));
  draw();
  return () => {
    document.removeEventListener('keydown', onKey, true);
    events.forEach(e => model.off(e, draw));
  };
}

export default { render };
