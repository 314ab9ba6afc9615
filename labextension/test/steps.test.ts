import { describe, expect, it } from 'vitest';
import steps, { focusAfter, type StepSection } from '../src/widgets/steps';

const SECTIONS: StepSection[] = [
  { name: 'Head', steps: [{ index: 0, text: 'smem_ring.ConsumerAuxWork(bind_read)', caution: null, up: false, down: true }] },
  {
    name: 'Loop',
    steps: [
      { index: 1, text: 'smem_ring.ConsumerWait', caution: "'read_tile' reads this wait's stage only", up: true, down: true },
      { index: 2, text: 'smem_ring.ConsumerRelease', caution: null, up: true, down: true }
    ]
  },
  { name: 'Tail', steps: [] }
];

function model(state: Record<string, any>) {
  const sent: Record<string, unknown>[] = [];
  const listeners: Record<string, (() => void)[]> = {};
  return {
    sent,
    state,
    set(name: string, value: unknown) {
      state[name] = value;
      (listeners[`change:${name}`] ?? []).forEach(f => f());
    },
    get: (name: string) => state[name],
    send: (c: Record<string, unknown>) => sent.push(c),
    on: (e: string, f: () => void) => (listeners[e] = [...(listeners[e] ?? []), f]),
    off: (e: string, f: () => void) => (listeners[e] = (listeners[e] ?? []).filter(g => g !== f))
  } as any;
}

describe("the schedule editor's step list", () => {
  it('lists each section with its steps, marks a caution, and disables the moves a step cannot make', () => {
    const el = document.createElement('div');
    steps.render({ model: model({ sections: SECTIONS, version: 3 }), el });
    expect([...el.querySelectorAll('.tslab-steplist-heading')].map(e => e.textContent)).toEqual(['Head', 'Loop', 'Tail']);
    const rows = [...el.querySelectorAll<HTMLElement>('.tslab-steplist-row')];
    expect(rows.map(r => r.querySelector('code')!.textContent)).toEqual(SECTIONS.flatMap(s => s.steps.map(t => t.text)));
    const marked = rows[1].querySelector('code')!;
    expect(marked.classList.contains('tslab-step-caution')).toBe(true);
    expect(marked.getAttribute('title')).toBe("'read_tile' reads this wait's stage only");
    expect(rows[0].querySelector<HTMLButtonElement>('.tslab-steplist-up')!.disabled).toBe(true);
    expect(rows[0].querySelector<HTMLButtonElement>('.tslab-steplist-down')!.disabled).toBe(false);
    expect(rows[2].querySelector<HTMLButtonElement>('.tslab-steplist-delete')!.getAttribute('aria-label')).toBe('delete: smem_ring.ConsumerRelease');
    expect(rows[2].querySelector<HTMLButtonElement>('.tslab-steplist-up')!.getAttribute('aria-label')).toBe('move up: smem_ring.ConsumerRelease');
  });

  it("sends each button's action with the step's index and the rows' version; the focus follows the step", () => {
    const m = model({ sections: SECTIONS, version: 3 });
    const el = document.createElement('div');
    document.body.appendChild(el);
    const dispose = steps.render({ model: m, el });
    const button = (row: number, action: string) => el.querySelectorAll<HTMLElement>('.tslab-steplist-row')[row].querySelector<HTMLButtonElement>(`.tslab-steplist-${action}`)!;
    button(1, 'up').click();  // the first Loop step: to the end of Head
    expect(m.sent).toEqual([{ kind: 'up', index: 1, version: 3 }]);
    const moved: StepSection[] = [
      { name: 'Head', steps: [SECTIONS[0].steps[0], { ...SECTIONS[1].steps[0], index: 1, up: true }] },
      { name: 'Loop', steps: [{ ...SECTIONS[1].steps[1], up: true }] },
      { name: 'Tail', steps: [] }
    ];
    m.state.version = 4;
    m.set('sections', moved);
    expect(document.activeElement).toBe(button(1, 'up'));  // the same step, one place up, its own button
    button(2, 'delete').click();
    expect(m.sent[1]).toEqual({ kind: 'delete', index: 2, version: 4 });
    // the keyboard: Alt+Down on a focused step's row moves it; Alt+Up on the first step of Head moves nothing
    const key = (target: HTMLElement, key: string) => target.dispatchEvent(new KeyboardEvent('keydown', { key, altKey: true, bubbles: true, cancelable: true }));
    expect(key(button(0, 'delete'), 'ArrowDown')).toBe(false); // taken: not the notebook's
    expect(m.sent[2]).toEqual({ kind: 'down', index: 0, version: 4 });
    key(button(0, 'down'), 'ArrowUp');
    expect(m.sent.length).toBe(3);
    dispose();
    m.set('sections', SECTIONS);  // no longer drawn here
    expect(el.querySelectorAll('.tslab-steplist-row').length).toBe(2 + 1);
    el.remove();
  });

  it('moves the keyboard across a section border at either end of a section', () => {
    expect(focusAfter(SECTIONS, 1, 0, 'up')).toEqual([0, 1]);
    expect(focusAfter(SECTIONS, 0, 0, 'down')).toEqual([1, 0]);
    expect(focusAfter(SECTIONS, 1, 1, 'down')).toEqual([2, 0]);
    expect(focusAfter(SECTIONS, 1, 1, 'up')).toEqual([1, 0]);
    expect(focusAfter(SECTIONS, 1, 1, 'delete')).toEqual([1, 1]);
  });
});
