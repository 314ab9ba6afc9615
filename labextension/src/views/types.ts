/**
 * The payloads tslab's Python side saves in a notebook, typed after `tslab/schemas/<kind>.v1.json`.
 */

export interface Op {
  stage: string;
  resource: string;
  label?: string | null;
}

export interface Entry {
  task: string;
  section: string;
  index: number;
  iteration?: number | null;
  tile?: number;
  part?: string | null;
  /** The loop guard that let the step run on this trip (`every(2, start=1)`); absent or null: every trip. */
  guard?: string | null;
}

export interface NextOp {
  op: Op | null;
  status: 'runnable' | 'blocked' | 'done';
  waits_for?: string;
}

export interface State {
  cursors: number[];
  prod_credits: Record<string, number>;
  cons_credits: Record<string, number>;
  held: Record<string, [string, string, number, number][]>;
  next_ops: Record<string, NextOp>;
  pdl_wait?: boolean;
}

export interface Step {
  index: number;
  task: string | null;
  op: Op | null;
  entry: Entry | null;
  state: State;
}

export interface Fault {
  kind: 'deadlock' | 'race' | 'pdl-order' | 'complete' | 'running';
  cursors: number[];
  message: string;
  blocked?: { task: string; stage: string; resource?: string; reason?: string }[];
  writer?: Record<string, string> | null;
  victim?: Record<string, string> | null;
  overlap?: string;
}

export interface TracePayload {
  tslab_trace: 1;
  design: string;
  tasks: string[];
  run?: string;
  fault: Fault;
  steps: Step[];
}

export interface Issue {
  kind: string;
  where: string;
  message: string;
  hint: string;
}

export interface Allocation {
  name: string;
  space: 'smem' | 'barrier' | 'tmem';
  offset: number;
  size: number;
  end: number;
  alignment: number;
  alias_group: number | null;
  phase: number | null;
}

export interface ScheduleRow {
  task: string;
  section: 'head' | 'loop' | 'tail';
  index: number;
  resource: string;
  stage: string;
  label: string | null;
  /** `Always`, `FirstIter`, `LastIter`, `every(n)`, `every(n, start=s)`, `when_true(<condition>)` or `when_false(...)`. */
  guard: string;
}

/** `Verdict.task_rows()`: a task's warps and loop, as the swimlane titles its lane. */
export interface TaskRow {
  name: string;
  warps: [number, number];
  /** Trips of the task's loop where TS knows them at build time (a runtime bound: null). */
  trips: number | null;
  persistent: boolean;
}

export interface Memory {
  smem_used: number;
  smem_data: number;
  barrier_bytes: number;
  smem_capacity: number;
  alias_savings: number;
  tmem_used: number;
  tmem_capacity: number;
}

export interface VerdictPayload {
  tslab_verdict: 1;
  kernel: string;
  status: string;
  ok: boolean;
  errors: Issue[];
  warnings?: string[];
  memory: Memory;
  layout: Allocation[];
  schedule: ScheduleRow[];
  tasks?: TaskRow[];
  /** Each pipeline's stages, type and bytes per stage (`Verdict.rings()`), as the flow diagram draws them; a
   * PipelineGroup's member names its group, a group its mode and members; a WorkQueue with no pipeline of its own
   * names its tile scheduler (`scheduler`, 0 stages). */
  rings?: Record<string, { num_stages: number; pipeline_type?: string; num_bytes?: number | null; group?: string; mode?: string; members?: string[]; scheduler?: string }>;
  checker: {
    verdict: string;
    states_explored: number;
    hit_state_limit: boolean;
    max_states: number | null;
    runs: number;
    context?: string;
    prover?: 'ts' | 'reduced';
    ts_states?: number | null;
  };
  trips?: { formulas: Record<string, string>; n: number[]; failed_at: number | null; text?: string } | null;
  trace?: TracePayload | null;
  design?: DesignPayload | null;
}

export interface DesignPayload {
  tslab_design: 1;
  kernel: string;
  params: Record<string, unknown>;
  pipelines?: Record<string, Record<string, unknown>>;
  schedules?: Record<string, unknown[][]>;
  alias_groups?: unknown[] | null;
  source?: Record<string, unknown>;
  knobs?: Record<string, unknown>;
  verdict?: VerdictPayload;
}

/** `Timeline.to_mime()` (tslab/schemas/timeline.v1.json). */
export interface TimelinePayload {
  tslab_timeline: 1;
  kernel: string;
  block_us?: number;
  marked_us?: number | null;
  minimal_us?: number | null;
  plain_us?: number | null;
  overhead?: number | null;
  tasks: { name: string; warps: number[]; overlapped?: string[] }[];
  /** [task index, warp, resource, stage, section, index, iteration or null, tile, start_ns, end_ns] */
  ranges: [number, number, string, string, string, number, number | null, number, number, number][];
  /** [task index, warp, start_ns, end_ns] */
  lifetimes?: [number, number, number, number][];
  total_ns: number;
  shown_until_ns: number;
  summary: { task: string; step: string; count: number; median_ns: number; p90_ns?: number; share: number; waits_for: string }[];
  reading: string[];
}
