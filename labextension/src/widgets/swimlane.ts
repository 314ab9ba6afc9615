/**
 * The live host of the schedule swimlane: the anywidget front end of `tslab.widgets.ScheduleView`, drawn by
 * the same `views/swimlane` module as a saved verdict's output. The model holds TS's schedule table as rows and
 * the tasks' warps; a dragged (or Alt+Left/Right) step goes to Python as a `move` message, which the Studio
 * applies to its design (or refuses, saying why, when the lanes show an earlier design).
 */

import { createSwimlane, type MoveRequest } from '../views/swimlane';
import type { ScheduleRow, TaskRow } from '../views/types';

export interface ScheduleViewModel {
  get(name: 'schedule'): ScheduleRow[];
  get(name: 'tasks'): TaskRow[];
  get(name: 'editable'): boolean;
  get(name: 'version'): number;
  send(content: Record<string, unknown>): void;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

function render({ model, el }: { model: ScheduleViewModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-swimlane');
  let refocus: MoveRequest | null = null;  // after a keyboard move, the keyboard stays on the moved step
  const move = (request: MoveRequest) => {
    refocus = request;
    model.send({ kind: 'move', version: model.get('version'), ...request });
  };
  const draw = () => {
    el.replaceChildren(createSwimlane(model.get('schedule'), { tasks: model.get('tasks'), onMove: model.get('editable') ? move : undefined }));
    if (refocus) {
      const lane = [...el.querySelectorAll<HTMLElement>('.tslab-lane')].find(l => l.dataset.task === refocus!.task);
      const steps = [...(lane?.querySelectorAll<HTMLElement>(`.tslab-step[data-section="${refocus.section}"]`) ?? [])];
      steps[Math.min(refocus.to_index, steps.length - 1)]?.focus();
      refocus = null;
    }
  };
  const events = ['change:schedule', 'change:tasks', 'change:editable'];
  events.forEach(e => model.on(e, draw));
  draw();
  return () => events.forEach(e => model.off(e, draw));
}

export default { render };
