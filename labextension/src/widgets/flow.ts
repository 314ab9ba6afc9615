/**
 * The live host of a design's flow diagram (`tslab.widgets.FlowView`): the same `views/flow` module, a click on
 * a ring sent to Python (the Studio marks that pipeline's panel, or its group's) and the panel scrolled into view.
 */

import { createFlow, type Ring } from '../views/flow';
import type { ScheduleRow, TaskRow } from '../views/types';

export interface FlowViewModel {
  get(name: 'schedule'): ScheduleRow[];
  get(name: 'rings'): Record<string, Ring>;
  get(name: 'tasks'): TaskRow[];
  get(name: 'selected'): string;
  send(content: Record<string, unknown>): void;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

function render({ model, el }: { model: FlowViewModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-flow');
  const select = (resource: string) => {
    model.send({ kind: 'select', resource });
    const owner = model.get('rings')[resource]?.group ?? resource; // a group's member is edited in its group's panel
    const panel = el.closest('.tslab-studio')?.querySelector(`.tslab-panel-${owner.replace(/[^A-Za-z0-9_-]/g, '_')}`);
    panel?.scrollIntoView?.({ block: 'nearest' });
  };
  const draw = () => el.replaceChildren(createFlow(model.get('schedule'), model.get('rings'), { selected: model.get('selected'), onSelect: select, tasks: model.get('tasks') ?? [] }));
  const events = ['change:schedule', 'change:tasks', 'change:rings', 'change:selected'];
  events.forEach(e => model.on(e, draw));
  draw();
  return () => events.forEach(e => model.off(e, draw));
}

export default { render };
