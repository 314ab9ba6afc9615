/** The TS schedule table as a swimlane: one row per task, its steps left to right (head, loop, tail). */

import { h } from './dom';
import type { ScheduleRow } from './types';

export const STAGE_FILLS: Record<string, string> = {
  ProducerAcquire: '#ddf4ff',
  ProducerTryAcquire: '#ddf4ff',
  ProducerCommit: '#b6e3ff',
  ConsumerWait: '#dafbe1',
  ConsumerTryWait: '#dafbe1',
  ConsumerRelease: '#aceebb'
};
export const WORK_FILL = '#f6f8fa';
export const SECTION_BORDER: Record<string, string> = { head: '#8c959f', loop: '#0969da', tail: '#8c959f' };
const ORDER: Record<string, number> = { head: 0, loop: 1, tail: 2 };

/** `{task: steps}` in head, loop, tail order (tasks in the table's order). */
export function swimlaneRows(schedule: ScheduleRow[]): Map<string, ScheduleRow[]> {
  const lanes = new Map<string, ScheduleRow[]>();
  for (const row of schedule) {
    lanes.set(row.task, [...(lanes.get(row.task) ?? []), row]);
  }
  for (const steps of lanes.values()) {
    steps.sort((a, b) => ORDER[a.section] - ORDER[b.section] || a.index - b.index);
  }
  return lanes;
}

function cell(step: ScheduleRow): HTMLElement {
  return h(
    'td',
    {
      class: `tslab-cell tslab-${step.section}`,
      style: `background:${STAGE_FILLS[step.stage] ?? WORK_FILL};border-top:3px solid ${SECTION_BORDER[step.section] ?? '#8c959f'}`,
      title: `${step.section} step ${step.index}`
    },
    h('b', {}, step.resource),
    h('br'),
    step.stage,
    step.label ? `(${step.label})` : '',
    step.guard !== 'Always' ? ` [${step.guard}]` : ''
  );
}

export function createSwimlane(schedule: ScheduleRow[]): HTMLElement {
  const lanes = swimlaneRows(schedule);
  if (!lanes.size) {
    return h('div', { class: 'tslab-swimlane' }, h('i', {}, 'no schedule (the design could not be lowered)'));
  }
  return h(
    'div',
    { class: 'tslab-swimlane' },
    h('table', {}, ...[...lanes].map(([task, steps]) => h('tr', {}, h('th', {}, task), ...steps.map(cell))))
  );
}
