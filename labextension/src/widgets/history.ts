/**
 * The live host of a Studio's history (`tslab.widgets.HistoryView`): undo and redo buttons over the newest
 * entries, the current one marked, any other one a click away. Ctrl+Z (Cmd+Z) undoes and Ctrl+Shift+Z or
 * Ctrl+Y redoes while the keyboard is in the Studio or after a click anywhere in it; in a text field, only once
 * what was typed there has been applied (Enter, or leaving the field): until then the field's own text undo is
 * the one meant, afterwards the field shows the design and its undo is the Studio's. The keys it takes never reach
 * the notebook.
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

/** Text fields holding typing that is not applied yet (typed into, no Enter since, still focused). */
const unapplied = new WeakSet<Element>();

/** Keep `unapplied` up to date: typing marks a field, Enter or leaving it applies (and clears) it. */
function trackTyping(event: Event): void {
  const field = (event.target as Element | null)?.closest?.(TEXT_FIELDS);
  if (!field) {
    return;
  }
  if (event.type === 'input') {
    unapplied.add(field);
  } else if (event.type !== 'keydown' || (event as KeyboardEvent).key === 'Enter') {
    unapplied.delete(field);
  }
}

/** Whether `field` holds typing that Enter or leaving it has not applied yet. */
export function typingUnapplied(field: Element): boolean {
  return unapplied.has(field);
}

/**
 * Whether an undo/redo key belongs to the Studio `scope`: the key's target is in it, or the last press of a
 * mouse button was in it (a click on the memory map or the flow diagram, which take no focus, leaves the focus
 * where it was: the notebook, or a cell's editor). A text field inside the Studio keeps its own undo only while it
 * holds typing not yet applied; once applied, the field shows the design and undo is the Studio's.
 */
export function studioOwnsKey(target: HTMLElement | null, scope: HTMLElement, pressedInStudio: boolean): boolean {
  if (!target) {
    return false;
  }
  if (scope.contains(target)) {
    const field = target.closest(TEXT_FIELDS);
    return !field || !typingUnapplied(field);
  }
  return pressedInStudio;
}

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
  let pressedInStudio = false;
  const scopeOf = () => (el.closest('.tslab-studio') as HTMLElement | null) ?? el;
  const onPress = (event: MouseEvent) => {
    const scope = scopeOf();
    const target = event.target as HTMLElement | null;
    pressedInStudio = !!target && scope.contains(target) && !target.closest(TEXT_FIELDS);
    if (pressedInStudio) {
      // Take the focus from wherever it was (a cell's editor keeps it through a click on an SVG otherwise), and
      // keep JupyterLab's own shortcuts (the notebook's undo among them) off the Studio's keys.
      scope.setAttribute('data-lm-suppress-shortcuts', 'true');
      if (!scope.hasAttribute('tabindex')) {
        scope.setAttribute('tabindex', '-1');
      }
    }
  };
  const onKey = (event: KeyboardEvent) => {
    const action = historyKey(event);
    if (!action || !studioOwnsKey(event.target as HTMLElement | null, scopeOf(), pressedInStudio)) {
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
    send(action);
  };
  const typing = ['input', 'keydown', 'change', 'focusout'];
  const track = (event: Event) => trackTyping(event); // one listener per Studio: each removes only its own
  typing.forEach(e => document.addEventListener(e, track, true));
  document.addEventListener('mousedown', onPress, true);
  document.addEventListener('keydown', onKey, true);
  const events = ['change:entries', 'change:can_undo', 'change:can_redo', 'change:hidden_before'];
  events.forEach(e => model.on(e, draw));
  draw();
  return () => {
    document.removeEventListener('keydown', onKey, true);
    document.removeEventListener('mousedown', onPress, true);
    typing.forEach(e => document.removeEventListener(e, track, true));
    events.forEach(e => model.off(e, draw));
  };
}

export default { render };
