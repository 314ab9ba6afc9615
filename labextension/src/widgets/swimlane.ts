/**
 * The live host of the schedule swimlane: the anywidget front end of `tslab.widgets.ScheduleView`, drawn by
 * the same `views/swimlane` module as a saved verdict's output. The model holds TS's schedule table as rows.
 */

import { createSwimlane } from '../views/swimlane';
import type { ScheduleRow } from '../views/types';

export interface ScheduleViewModel {
  get(name: 'schedule'): ScheduleRow[];
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
}

function render({ model, el }: { model: ScheduleViewModel; el: HTMLElement }): () => void {
  el.classList.add('tslab-rendered', 'tslab-widget-swimlane');
  const draw = () => el.replaceChildren(createSwimlane(model.get('schedule')));
  model.on('change:schedule', draw);
  draw();
  return () => model.off('change:schedule', draw);
}

export default { render };
