/**
 * The live host of one task's step list in the schedule editor (`tslab.widgets.step_list.StepList`): the task's
 * steps grouped Head / Loop / Tail, each with move up, move down and delete. One model per task, however many
 * steps (a row of ipywidgets was five comms a step: the attention Studio's schedules tab sent the page ~750 of
 * them). A button sends `{kind, index, version}`; Python applies it to the design on show (or says the click was
 * on rows an edit has since redrawn), re-checks, and sends the new rows.
 */

import { h } from '../views/dom';

export interface StepRowData {
  index: number;
  text: string;
  caution: string | null;
  up: boolean;
  down: boolean;
}

export interface StepSection {
  name: string;
  steps: StepRowData[];
}

export interface StepListModel {
  get(name: 'sections'): StepSection[];
  get(name: 'version'): number;
  send(content: Record<string, unknown>): void;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

type Action = 'up' | 'down' | 'delete';

/** Each button: its action, glyph, what it does (its accessible name) and the tooltip that adds its key. */
const BUTTONS: [Action, string, string, string][] = [
  ['up', '\u2191', 'move up', 'move up (Alt+Up)'],
  ['down', '\u2193', 'move down', 'move down (Alt+Down)'],
  ['delete', '\u00d7', 'delete', 'delete']
];

/** The move a key asks of the step whose row has the keyboard: Alt+Up and Alt+Down, as Alt+Left/Right in the lanes. */
export function moveKey(event: KeyboardEvent): 'up' | 'down' | null {
  if (!event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
    return null;
  }
  return event.key === 'ArrowUp' ? 'up' : event.key === 'ArrowDown' ? 'down' : null;
}

/** Where the keyboard goes after an action: the same button on the step where it now is (moved one place up or
 * down, across a section border at the ends), or the row that took a deleted step's place. */
export function focusAfter(sections: StepSection[], section: number, position: number, action: Action): [number, number] {
  if (action === 'up') {
    return position > 0 ? [section, position - 1] : [section - 1, sections[section - 1].steps.length];
  }
  if (action === 'down') {
    return position < sections[section].steps.length - 1 ? [section, position + 1] : [section + 1, 0];
  }
  return [section, position];
}

export function createStepList(sections: StepSection[], act?: (action: Action, index: number, at: [number, number]) => void): HTMLElement {
  const parts = sections.map((section, s) =>
    h(
      'div',
      { class: 'tslab-steplist-section', 'data-section': section.name },
      h('i', { class: 'tslab-steplist-heading' }, section.name),
      ...section.steps.map((step, position) => {
        const text = h('code', { class: step.caution ? 'tslab-steplist-text tslab-step-caution' : 'tslab-steplist-text' }, step.text);
        if (step.caution) {
          text.setAttribute('title', step.caution);
        }
        const buttons = BUTTONS.map(([action, glyph, name, tip]) => {
          const button = h('button', { type: 'button', class: `tslab-steplist-${action}`, title: tip, 'aria-label': `${name}: ${step.text}` }, glyph) as HTMLButtonElement;
          button.disabled = !act || (action === 'up' && !step.up) || (action === 'down' && !step.down);
          button.addEventListener('click', () => act?.(action, step.index, [s, position]));
          return button;
        });
        const row = h('div', { class: 'tslab-steplist-row', 'data-index': step.index }, text, ...buttons);
        row.addEventListener('keydown', event => {
          const action = moveKey(event);
          if (!action) {
            return;
          }
          event.preventDefault();
          event.stopPropagation(); // the notebook's own arrow keys stay out of it
          if (act && step[action]) {
            act(action, step.index, [s, position]);
          }
        });
        return row;
      })
    )
  );
  return h('div', { class: 'tslab-steplist' }, ...parts);
}

function render({ model, el }: { model: StepListModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-steplist');
  // The keyboard follows the step it acted on when the rows come back; a refused edit sends none, so a redraw
  // long after (another view's edit) leaves the focus where it is.
  let refocus: { action: Action; at: [number, number]; until: number } | null = null;
  const act = (action: Action, index: number, at: [number, number]) => {
    refocus = { action, at: focusAfter(model.get('sections'), at[0], at[1], action), until: Date.now() + 5000 };
    model.send({ kind: action, index, version: model.get('version') });
  };
  const draw = () => {
    el.replaceChildren(createStepList(model.get('sections'), act));
    if (refocus && Date.now() < refocus.until) {
      const [section, position] = refocus.at;
      const rows = el.querySelectorAll<HTMLElement>('.tslab-steplist-section')[section]?.querySelectorAll<HTMLElement>('.tslab-steplist-row');
      const row = rows?.[Math.min(position, rows.length - 1)];
      const button = row?.querySelector<HTMLButtonElement>(`.tslab-steplist-${refocus.action}`);
      (button && !button.disabled ? button : row?.querySelector<HTMLButtonElement>('button:not(:disabled)'))?.focus();
    }
    refocus = null;
  };
  model.on('change:sections', draw);
  draw();
  return () => model.off('change:sections', draw);
}

export default { render };
