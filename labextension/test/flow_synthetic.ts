/**
 * A synthetic flow with the shape of a Blackwell FlashAttention forward kernel (8 tasks): Q and a merged K/V
 * group loaded by two warps, one MMA warp feeding two softmax warpgroups through TMEM (S and P both ways), their
 * statistics to a correction warpgroup, O to the epilogue, and a CLC work queue read by every task. The
 * schedule rows are what TS's table would hold (each producer acquires, works, commits; each consumer waits,
 * works, releases), listed in an order that is not the dataflow's.
 */

import type { ScheduleRow } from '../src/views/types';

const P = 'P';
const C = 'C';
/** Each task's pipeline steps in order: [resource, producer or consumer]. */
const STEPS: Record<string, [string, string][]> = {
  Softmax0Task: [['work_queue', C], ['tmem_s0', C], ['tmem_p0', P], ['stats0', P]],
  Softmax1Task: [['work_queue', C], ['tmem_s1', C], ['tmem_p1', P], ['stats1', P]],
  CorrectionTask: [['work_queue', C], ['stats0', C], ['stats1', C], ['tmem_o', C], ['smem_o', P]],
  MmaTask: [['work_queue', C], ['smem_q', C], ['smem_k', C], ['tmem_s0', P], ['tmem_s1', P], ['tmem_p0', C], ['tmem_p1', C], ['smem_v', C], ['kv', C], ['tmem_o', P]],
  EpilogueTask: [['work_queue', C], ['smem_o', C]],
  LoadQTask: [['work_queue', C], ['smem_q', P]],
  LoadKVTask: [['work_queue', C], ['smem_k', P], ['smem_v', P]],
  SchedulerTask: [['work_queue', P], ['work_queue', C]]
};
const WARPS: Record<string, [number, number]> = {
  Softmax0Task: [0, 3], Softmax1Task: [4, 7], CorrectionTask: [8, 11], MmaTask: [12, 12], EpilogueTask: [13, 13],
  LoadQTask: [14, 14], LoadKVTask: [15, 15], SchedulerTask: [16, 16]
};

export function synthetic() {
  const schedule: ScheduleRow[] = [];
  for (const [task, steps] of Object.entries(STEPS)) {
    let index = 0;
    for (const [resource, role] of steps) {
      const stages = role === P ? ['ProducerAcquire', 'ProducerWork', 'ProducerCommit'] : ['ConsumerWait', 'ConsumerWork', 'ConsumerRelease'];
      const only = resource === 'kv' ? ['ConsumerRelease'] : stages; // the merged group: one release for both
      for (const stage of only) {
        schedule.push({ task, section: 'loop', index: index++, resource, stage, label: stage.endsWith('Work') ? 'work' : null, guard: 'Always' });
      }
    }
  }
  const ring = (num_stages: number, pipeline_type: string, num_bytes: number | null = 0) => ({ num_stages, pipeline_type, num_bytes });
  const rings = {
    work_queue: ring(1, 'ClcFetchAsync', 16),
    smem_q: ring(2, 'TmaUmma', 32768),
    kv: { ...ring(3, 'TmaUmma', 65536), mode: 'Merge', members: ['smem_k', 'smem_v'] },
    smem_k: { ...ring(3, 'TmaUmma', 32768), group: 'kv' },
    smem_v: { ...ring(3, 'TmaUmma', 32768), group: 'kv' },
    tmem_s0: ring(1, 'UmmaAsync'),
    tmem_s1: ring(1, 'UmmaAsync'),
    tmem_p0: ring(1, 'AsyncUmma'),
    tmem_p1: ring(1, 'AsyncUmma'),
    stats0: ring(2, 'AsyncAsync', 512),
    stats1: ring(2, 'AsyncAsync', 512),
    tmem_o: ring(1, 'UmmaAsync'),
    smem_o: ring(1, 'AsyncAsync', 32768)
  };
  const tasks = Object.keys(STEPS).map(name => ({ name, warps: WARPS[name], trips: null, persistent: true }));
  return { schedule, rings, tasks };
}
