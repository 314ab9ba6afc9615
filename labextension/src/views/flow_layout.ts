/**
 * Where the flow diagram puts things: tasks as nodes in dataflow order (producers above their consumers), each
 * pipeline a ring node on the way from the task(s) that produce into it to the task(s) that consume from it, a
 * PipelineGroup one node holding its members' rings. dagre (`@dagrejs/dagre`) ranks and orders the nodes; the
 * edges are then routed here orthogonally: out of a node's bottom (into a node's top), horizontal runs only in
 * the gaps between ranks, each on a track of its own, vertical runs only through dagre's own dummy nodes, so no
 * edge crosses a node. Pure: no DOM, sizes from character counts of the fonts the drawing uses.
 */

import dagre from '@dagrejs/dagre';
import type { ScheduleRow, TaskRow } from './types';

export interface Ring {
  num_stages: number;
  pipeline_type?: string;
  num_bytes?: number | null;
  /** The PipelineGroup a member ring belongs to. */
  group?: string | null;
  /** A PipelineGroup's mode ("Merge") and members. */
  mode?: string | null;
  members?: string[] | null;
}

export interface FlowEdge {
  resource: string;
  producers: string[];
  consumers: string[];
}

const PRODUCER = /^Producer/;
const CONSUMER = /^Consumer/;
const ORDER: Record<string, number> = { head: 0, loop: 1, tail: 2 };

/** Each pipelined resource with the tasks that produce into it and consume from it (TS's schedule table). */
export function flowEdges(schedule: ScheduleRow[], rings: Record<string, Ring>): FlowEdge[] {
  const edges = new Map<string, FlowEdge>();
  for (const row of schedule) {
    if (!(row.resource in rings)) {
      continue;
    }
    const edge = edges.get(row.resource) ?? { resource: row.resource, producers: [], consumers: [] };
    const side = PRODUCER.test(row.stage) ? edge.producers : CONSUMER.test(row.stage) ? edge.consumers : null;
    if (side && !side.includes(row.task)) {
      side.push(row.task);
    }
    edges.set(row.resource, edge);
  }
  return [...edges.values()];
}

/** A task's steps in the order it runs them: head, loop, tail. */
function stepsOf(schedule: ScheduleRow[], task: string): ScheduleRow[] {
  return schedule.filter(r => r.task === task).sort((a, b) => ORDER[a.section] - ORDER[b.section] || a.index - b.index);
}

/** Strongly connected components of `nodes` under `next` (Tarjan), each in `nodes`' order. */
function components(nodes: string[], next: (n: string) => string[]): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        scc.push(w);
      } while (w !== v);
      out.push(nodes.filter(n => scc.includes(n)));
    }
  };
  nodes.forEach(n => index.has(n) || visit(n));
  return out;
}

/**
 * The tasks in dataflow order: a task comes after the tasks that produce into the rings it consumes from. Where
 * the rings form a cycle (attention: S feeds softmax, P feeds the PV MMA, its release frees the next S), the
 * cycle starts at the task that can move first, the one whose first step on a ring of the cycle is a producer's
 * (rings start empty: a producer goes on, a consumer waits). Ties keep TS's order of the tasks.
 */
export function dataflowOrder(tasks: string[], edges: FlowEdge[], schedule: ScheduleRow[]): string[] {
  const next = (t: string, among: Set<string>) => [...new Set(edges.filter(e => e.producers.includes(t)).flatMap(e => e.consumers))].filter(c => c !== t && among.has(c));
  const feeds = (p: string, c: string) => edges.some(e => e.producers.includes(p) && e.consumers.includes(c));
  const order: string[] = [];
  const left = new Set(tasks);
  while (left.size) {
    const ready = tasks.filter(t => left.has(t) && ![...left].some(p => p !== t && feeds(p, t)));
    let pick = ready[0];
    if (pick === undefined) {
      const sccs = components(tasks.filter(t => left.has(t)), t => next(t, left));
      const source = sccs.find(scc => !scc.some(t => [...left].some(p => !scc.includes(p) && feeds(p, t)))) ?? sccs[0];
      const inCycle = (row: ScheduleRow) => {
        const e = edges.find(x => x.resource === row.resource);
        const others = (names: string[]) => names.some(n => n !== row.task && source.includes(n));
        return !!e && ((PRODUCER.test(row.stage) && others(e.consumers)) || (CONSUMER.test(row.stage) && others(e.producers)));
      };
      const first = (t: string) => stepsOf(schedule, t).find(inCycle);
      pick = source.find(t => PRODUCER.test(first(t)?.stage ?? '')) ?? source[0];
    }
    order.push(pick);
    left.delete(pick);
  }
  return order;
}

/** Pixels per character of the diagram's monospace text, by font size (0.6 em, rounded up). */
export const charPx = (size: number) => size * 0.62;
export const NAME_PX = 12;
export const TEXT_PX = 11;
export const NODE_H = 40;
export const RING_R = 12;
/** Left edge of a ring node's text: the ring (and its stroke) and a gap. */
export const RING_TEXT_X = 8 + 2 * RING_R + 10;
const GROUP_HEAD = 18;
const GROUP_PAD = 6;
const TRACK = 8;
const MARGIN = 6;

export interface RingBox {
  resource: string;
  ring: Ring;
  /** Left and top of the ring's box, relative to the diagram. */
  x: number;
  y: number;
  width: number;
  height: number;
  detail: string;
}

export interface FlowNode {
  id: string;
  kind: 'task' | 'ring' | 'group';
  x: number;
  y: number;
  width: number;
  height: number;
  /** A task's warps ("warps 0-3"), where known. */
  detail?: string;
  /** The ring boxes a ring (one) or a group (its members) holds. */
  rings: RingBox[];
}

export interface FlowPath {
  resource: string;
  from: string;
  to: string;
  /** Corner points from the port on `from`'s box to the port on `to`'s. */
  points: { x: number; y: number }[];
}

export interface FlowLayout {
  width: number;
  height: number;
  tasks: string[];
  nodes: FlowNode[];
  edges: FlowPath[];
}

/** "TmaAsync, 48 KiB" under a ring's name: its pipeline type and the bytes of each stage. */
export function ringDetail(r: Ring): string {
  const bytes = r.num_bytes ? (r.num_bytes >= 1024 ? `${Math.round(r.num_bytes / 1024)} KiB` : `${r.num_bytes} B`) : '';
  return [r.pipeline_type, bytes].filter(Boolean).join(', ');
}

export function warpsText(info: TaskRow | undefined): string {
  return info ? (info.warps[0] === info.warps[1] ? `warp ${info.warps[0]}` : `warps ${info.warps[0]}-${info.warps[1]}`) : '';
}

function ringBox(resource: string, ring: Ring): RingBox {
  const detail = ringDetail(ring);
  const text = Math.max(resource.length * charPx(TEXT_PX), detail.length * charPx(TEXT_PX));
  return { resource, ring, x: 0, y: 0, width: Math.ceil(RING_TEXT_X + text + 8), height: NODE_H, detail };
}

interface Link {
  resource: string;
  from: string;
  to: string;
  /** The member ring of a group node the edge attaches to, or null (the whole node). */
  member: string | null;
}

/** The nodes (tasks, rings and groups) and links (task -> ring node -> task) of a design's flow. */
function graphOf(schedule: ScheduleRow[], rings: Record<string, Ring>, tasks: TaskRow[]) {
  const edges = flowEdges(schedule, rings);
  const names = [...new Set(schedule.map(r => r.task))];
  const order = dataflowOrder(names, edges, schedule);
  const info = new Map(tasks.map(t => [t.name, t]));
  const nodes = new Map<string, FlowNode>();
  const warps = tasks.length > 0;
  for (const t of order) {
    const detail = warpsText(info.get(t));
    const width = Math.ceil(Math.max(t.length * charPx(NAME_PX), detail.length * charPx(TEXT_PX)) + 20);
    nodes.set(`task:${t}`, { id: `task:${t}`, kind: 'task', x: 0, y: 0, width, height: warps ? NODE_H : 28, detail, rings: [] });
  }
  const links: Link[] = [];
  const groupOf = (resource: string) => rings[resource]?.group ?? (rings[resource]?.members?.length ? resource : null);
  for (const e of edges) {
    const group = groupOf(e.resource);
    const id = group ? `ring:${group}` : `ring:${e.resource}`;
    if (!nodes.has(id)) {
      if (group) {
        const members = (rings[group]?.members ?? []).filter(m => m in rings).map(m => ringBox(m, rings[m]));
        const width = GROUP_PAD + members.reduce((sum, m) => sum + m.width + GROUP_PAD, 0);
        const head = Math.ceil((group.length + 9) * charPx(TEXT_PX) + 2 * GROUP_PAD);
        nodes.set(id, { id, kind: 'group', x: 0, y: 0, width: Math.max(width, head), height: GROUP_HEAD + NODE_H + GROUP_PAD, rings: members });
      } else {
        const box = ringBox(e.resource, rings[e.resource]);
        nodes.set(id, { id, kind: 'ring', x: 0, y: 0, width: box.width, height: box.height, rings: [box] });
      }
    }
    const member = group && e.resource !== group ? e.resource : null;
    for (const p of e.producers) {
      links.push({ resource: e.resource, from: `task:${p}`, to: id, member });
    }
    for (const c of e.consumers) {
      links.push({ resource: e.resource, from: id, to: `task:${c}`, member });
    }
  }
  // A group's own steps (the merged release) repeat what its members' edges already draw.
  const drawn = links.filter(l => !(l.member === null && groupOf(l.resource) === l.resource && links.some(o => o.member !== null && o.from === l.from && o.to === l.to)));
  const unique = drawn.filter((l, i) => drawn.findIndex(o => o.from === l.from && o.to === l.to && o.member === l.member) === i);
  return { order, nodes, links: unique };
}

/** A node's place in dataflow order: a task's index; a ring just after the last of its producers that come before
 * its first consumer (a producer further down feeds it from below, as a cycle's last task does). */
function positions(order: string[], nodes: Map<string, FlowNode>, links: Link[]): Map<string, number> {
  const pos = new Map(order.map((t, i) => [`task:${t}`, i]));
  for (const id of nodes.keys()) {
    if (!pos.has(id)) {
      const producers = links.filter(l => l.to === id).map(l => pos.get(l.from)!);
      const first = Math.min(...links.filter(l => l.from === id).map(l => pos.get(l.to)!));
      const before = producers.filter(p => p < first);
      pos.set(id, before.length ? Math.max(...before) + 0.5 : producers.length ? Math.min(...producers) + 0.5 : first - 0.5);
    }
  }
  return pos;
}

interface Route {
  link: Link;
  down: boolean;
  /** The x of each rank the edge passes through (dagre's dummy nodes), from `from` to `to`. */
  columns: number[];
  /** The gaps crossed, from `from` to `to` (index g: between bands g and g+1). */
  gaps: number[];
  startX: number;
  endX: number;
  tracks: number[];
}

/** Lay out a design's flow: nodes in dataflow order, edges routed around them. */
export function layoutFlow(schedule: ScheduleRow[], rings: Record<string, Ring>, tasks: TaskRow[] = []): FlowLayout {
  const { order, nodes, links } = graphOf(schedule, rings, tasks);
  const pos = positions(order, nodes, links);
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 22, ranksep: 26, edgesep: 14, marginx: MARGIN, marginy: MARGIN });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = [...nodes.keys()].sort((a, b) => pos.get(a)! - pos.get(b)!);
  ids.forEach(id => g.setNode(id, { width: nodes.get(id)!.width, height: nodes.get(id)!.height }));
  links.forEach((l, i) => {
    const forward = pos.get(l.from)! < pos.get(l.to)!;
    g.setEdge(forward ? l.from : l.to, forward ? l.to : l.from, { minlen: 1 }, String(i));
  });
  dagre.layout(g);
  // Ranks as bands of y: the nodes of one rank share their centre.
  const centres = [...new Set(ids.map(id => g.node(id).y!))].sort((a, b) => a - b);
  const rank = new Map(ids.map(id => [id, centres.indexOf(g.node(id).y!)]));
  const bands = centres.map((centre, k) => {
    const inRank = ids.filter(id => rank.get(id) === k).map(id => nodes.get(id)!);
    return { centre, top: centre - Math.max(...inRank.map(n => n.height)) / 2, bottom: centre + Math.max(...inRank.map(n => n.height)) / 2 };
  });
  for (const id of ids) {
    const node = nodes.get(id)!;
    node.x = g.node(id).x! - node.width / 2;
  }
  // Nodes of one rank linked to the same nodes (ping-pong's MmaTask0 and MmaTask1) in dataflow order, left to right.
  orderTwins(ids, rank, nodes, links, pos);
  // A group's members side by side in the order of the tasks that fill them, so that their edges do not cross.
  for (const node of nodes.values()) {
    if (node.kind === 'group') {
      const filledFrom = (member: string) => {
        const xs = links.filter(l => l.member === member && l.to === node.id).map(l => g.node(l.from).x!);
        return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity;
      };
      node.rings.sort((a, b) => filledFrom(a.resource) - filledFrom(b.resource));
    }
  }
  const routes: Route[] = links.map((link, i) => {
    const [a, b] = [rank.get(link.from)!, rank.get(link.to)!];
    const down = a < b;
    const forward = pos.get(link.from)! < pos.get(link.to)!;
    const points: { x: number; y: number }[] = g.edge({ v: forward ? link.from : link.to, w: forward ? link.to : link.from, name: String(i) })?.points ?? [];
    const between = down ? centres.slice(a + 1, b) : centres.slice(b + 1, a).reverse();
    const columns = between.map(c => points.reduce((best, p) => (Math.abs(p.y - c) < Math.abs(best.y - c) ? p : best), points[0] ?? { x: 0, y: c }).x);
    const gaps = down ? Array.from({ length: b - a }, (_, k) => a + k) : Array.from({ length: a - b }, (_, k) => a - 1 - k);
    return { link, down, columns, gaps, startX: 0, endX: 0, tracks: [] };
  });
  assignPorts(routes, nodes);
  separatePorts(routes, nodes);
  const heights = assignTracks(routes, bands.length - 1);
  // Each gap tall enough for its tracks: everything below it moves down.
  let shift = 0;
  const gapTop: number[] = [];
  bands.forEach((b, k) => {
    const next = k < bands.length - 1 ? bands[k + 1].top - b.bottom : 0;
    b.top += shift;
    b.bottom += shift;
    b.centre += shift;
    if (k < bands.length - 1) {
      gapTop.push(b.bottom);
      shift += Math.max(0, (heights[k] + 1) * TRACK - next);
    }
  });
  for (const id of ids) {
    const node = nodes.get(id)!;
    node.y = bands[rank.get(id)!].centre - node.height / 2;
  }
  const gapHeight = (k: number) => bands[k + 1].top - bands[k].bottom;
  const edges: FlowPath[] = routes.map(r => {
    const from = nodes.get(r.link.from)!;
    const to = nodes.get(r.link.to)!;
    const pts = [{ x: r.startX, y: r.down ? from.y + from.height : from.y }];
    const xs = [...r.columns, r.endX];
    r.gaps.forEach((k, i) => {
      const y = gapTop[k] + (r.tracks[i] + 1) * (gapHeight(k) / (heights[k] + 1));
      const x0 = pts[pts.length - 1].x;
      pts.push({ x: x0, y }, { x: xs[i], y });
    });
    pts.push({ x: r.endX, y: r.down ? to.y : to.y + to.height });
    return { resource: r.link.resource, from: r.link.from, to: r.link.to, points: simplify(pts) };
  });
  for (const node of nodes.values()) {
    let x = node.x + GROUP_PAD;
    for (const box of node.rings) {
      box.x = node.kind === 'group' ? x : node.x;
      box.y = node.kind === 'group' ? node.y + GROUP_HEAD : node.y;
      x += box.width + GROUP_PAD;
    }
  }
  const width = Math.ceil(Math.max(...[...nodes.values()].map(n => n.x + n.width), ...edges.flatMap(e => e.points.map(p => p.x))) + MARGIN);
  const height = Math.ceil(Math.max(...[...nodes.values()].map(n => n.y + n.height)) + MARGIN);
  return { width, height, tasks: order, nodes: [...nodes.values()], edges };
}

/** Put nodes of one rank that link to exactly the same nodes (swapping them crosses nothing new) in dataflow order,
 * where their places allow it (no overlap). */
function orderTwins(ids: string[], rank: Map<string, number>, nodes: Map<string, FlowNode>, links: Link[], pos: Map<string, number>): void {
  const signature = (id: string) =>
    [rank.get(id), ...links.filter(l => l.from === id || l.to === id).map(l => `${l.from === id ? '>' : '<'}${l.from === id ? l.to : l.from}|${l.member}`).sort()].join(',');
  const twins = new Map<string, string[]>();
  ids.forEach(id => twins.set(signature(id), [...(twins.get(signature(id)) ?? []), id]));
  for (const group of twins.values()) {
    if (group.length < 2) {
      continue;
    }
    const centres = group.map(id => nodes.get(id)!.x + nodes.get(id)!.width / 2).sort((a, b) => a - b);
    const before = group.map(id => nodes.get(id)!.x);
    [...group].sort((a, b) => pos.get(a)! - pos.get(b)!).forEach((id, i) => (nodes.get(id)!.x = centres[i] - nodes.get(id)!.width / 2));
    const inRank = ids.filter(id => rank.get(id) === rank.get(group[0])).map(id => nodes.get(id)!);
    const clash = inRank.some((a, i) => inRank.slice(i + 1).some(b => a.x < b.x + b.width && b.x < a.x + a.width));
    if (clash) {
      group.forEach((id, i) => (nodes.get(id)!.x = before[i]));
    }
  }
}

/** Spread the edges leaving (entering) each node's side over its width, ordered by where they head. */
function assignPorts(routes: Route[], nodes: Map<string, FlowNode>): void {
  const ends: { route: Route; start: boolean; key: string; toward: number }[] = [];
  for (const r of routes) {
    const from = nodes.get(r.link.from)!;
    const to = nodes.get(r.link.to)!;
    const centre = (n: FlowNode) => n.x + n.width / 2;
    const memberOf = (n: FlowNode) => (r.link.member ? n.rings.findIndex(b => b.resource === r.link.member) : -1);
    ends.push({ route: r, start: true, key: `${from.id}|${r.down ? 'bottom' : 'top'}|${memberOf(from)}`, toward: r.columns[0] ?? centre(to) });
    ends.push({ route: r, start: false, key: `${to.id}|${r.down ? 'top' : 'bottom'}|${memberOf(to)}`, toward: r.columns[r.columns.length - 1] ?? centre(from) });
  }
  const sides = new Map<string, typeof ends>();
  ends.forEach(e => sides.set(e.key, [...(sides.get(e.key) ?? []), e]));
  for (const [key, list] of sides) {
    const [id, , member] = key.split('|');
    const node = nodes.get(id)!;
    const m = Number(member);
    // a group's member: its ring box's span (boxes sit side by side after GROUP_PAD)
    let left = node.x;
    let width = node.width;
    if (m >= 0) {
      left = node.x + GROUP_PAD + node.rings.slice(0, m).reduce((s, b) => s + b.width + GROUP_PAD, 0);
      width = node.rings[m].width;
    }
    list.sort((a, b) => a.toward - b.toward);
    list.forEach((e, i) => {
      const x = left + (width * (i + 1)) / (list.length + 1);
      if (e.start) {
        e.route.startX = x;
      } else {
        e.route.endX = x;
      }
    });
  }
}

/** Move a port sideways where it would run down (up) the same line as another edge in the same gap. */
function separatePorts(routes: Route[], nodes: Map<string, FlowNode>): void {
  const pieces = () =>
    routes.flatMap(r => {
      const xs = [r.startX, ...r.columns, r.endX];
      return r.gaps.flatMap((gap, i) => [
        { r, gap, x: xs[i], port: i === 0 ? ('start' as const) : null },
        { r, gap, x: xs[i + 1], port: i === r.gaps.length - 1 ? ('end' as const) : null }
      ]);
    });
  for (let round = 0; round < 20; round++) {
    const all = pieces();
    const clash = all.find(a => a.port && all.some(b => b.r !== a.r && b.gap === a.gap && Math.abs(b.x - a.x) < 4));
    if (!clash) {
      return;
    }
    const node = nodes.get(clash.port === 'start' ? clash.r.link.from : clash.r.link.to)!;
    const taken = all.filter(b => b.gap === clash.gap && b !== clash).map(b => b.x);
    const free = [6, -6, 12, -12, 18, -18, 24, -24].map(d => clash.x + d).find(x => x > node.x + 3 && x < node.x + node.width - 3 && taken.every(t => Math.abs(t - x) >= 4));
    if (free === undefined) {
      return;
    }
    if (clash.port === 'start') {
      clash.r.startX = free;
    } else {
      clash.r.endX = free;
    }
  }
}

/** A track per horizontal run in each gap, so that no two runs share a line; returns each gap's track count. */
function assignTracks(routes: Route[], gaps: number): number[] {
  const runs: { route: Route; i: number; lo: number; hi: number }[][] = Array.from({ length: Math.max(gaps, 0) }, () => []);
  for (const r of routes) {
    const xs = [r.startX, ...r.columns, r.endX];
    r.gaps.forEach((k, i) => {
      r.tracks[i] = 0;
      runs[k].push({ route: r, i, lo: Math.min(xs[i], xs[i + 1]), hi: Math.max(xs[i], xs[i + 1]) });
    });
  }
  return runs.map(list => {
    const ends: number[] = [];
    list.sort((a, b) => a.lo - b.lo || a.hi - b.hi);
    for (const run of list) {
      if (run.hi - run.lo < 0.5) {
        continue; // straight down: no horizontal run; it passes through the middle track
      }
      let t = ends.findIndex(end => end < run.lo - 3);
      if (t < 0) {
        t = ends.length;
        ends.push(0);
      }
      ends[t] = run.hi;
      run.route.tracks[run.i] = t;
    }
    for (const run of list.filter(r => r.hi - r.lo < 0.5)) {
      run.route.tracks[run.i] = Math.floor(Math.max(ends.length - 1, 0) / 2);
    }
    return Math.max(ends.length, 1);
  });
}

/** Drop points that lie on the straight line through their neighbours. */
function simplify(points: { x: number; y: number }[]): { x: number; y: number }[] {
  return points.filter((p, i) => {
    if (i === 0 || i === points.length - 1) {
      return true;
    }
    const [a, b] = [points[i - 1], points[i + 1]];
    return !((Math.abs(a.x - p.x) < 0.01 && Math.abs(b.x - p.x) < 0.01) || (Math.abs(a.y - p.y) < 0.01 && Math.abs(b.y - p.y) < 0.01));
  });
}
