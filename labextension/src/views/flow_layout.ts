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
  /** A WorkQueue with no pipeline of its own: its tile scheduler (`StaticPersistent`); it has no stages, and every
   * task that takes tiles from it is its consumer. */
  scheduler?: string | null;
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
/** Room between a gap's lowest track and the rank below it: where a crossing there would touch an arrowhead. */
const TIP_CLEAR = 14;
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

/** "TmaAsync, 48 KiB" under a ring's name: its pipeline type and the bytes of each stage (a work queue's
 * scheduler: "static scheduler"). */
export function ringDetail(r: Ring): string {
  if (r.scheduler) {
    return `${r.scheduler.replace(/Persistent$/, '').toLowerCase()} scheduler`;
  }
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
  if (straighten(routes, nodes, rank)) {
    assignPorts(routes, nodes); // the other end heads for the straightened line too
  }
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
      shift += Math.max(0, heights[k] * TRACK + TIP_CLEAR - next);
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
      // tracks from the top of the gap down to TIP_CLEAR above the rank below (arrowheads point into its nodes)
      const y = gapTop[k] + ((r.tracks[i] + 1) * (gapHeight(k) - TIP_CLEAR)) / heights[k];
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

/** Least distance between two ports on one side of a node: arrowheads (7 px) never touch. */
const PORT_GAP = 12;

/** Where the edges leave (enter) each node's side: as near as room allows to where they come from or head, so
 * that an edge between two nodes one above the other runs straight down and one from far left enters at the left;
 * in that order along the side, at least `PORT_GAP` apart (spread evenly where the side is too short for that),
 * on the flat part of the side (a ring's box is a pill, a task's box has rounded corners). */
function assignPorts(routes: Route[], nodes: Map<string, FlowNode>): void {
  type Flat = { min: number; max: number; left: number; width: number };
  type End = Flat & { route: Route; start: boolean; key: string; toward: number };
  const flat = (n: FlowNode, member: string | null): Flat => {
    const m = member && n.kind !== 'task' ? n.rings.findIndex(b => b.resource === member) : -1;
    // a group's member: its ring box's span (boxes sit side by side after GROUP_PAD)
    const left = m < 0 ? n.x : n.x + GROUP_PAD + n.rings.slice(0, m).reduce((sum, b) => sum + b.width + GROUP_PAD, 0);
    const width = m < 0 ? n.width : n.rings[m].width;
    const inset = Math.min(n.kind === 'task' ? 8 : n.kind === 'group' && m < 0 ? 12 : NODE_H / 2, width / 2);
    return { min: left + inset, max: left + width - inset, left, width };
  };
  const ends: End[] = [];
  for (const r of routes) {
    const [from, to] = [nodes.get(r.link.from)!, nodes.get(r.link.to)!];
    const [a, b] = [flat(from, r.link.member), flat(to, r.link.member)];
    // an edge straight from one node to the next: both ends in the middle of where the two sides overlap, else
    // facing each other across the gap between them
    const direct = (Math.max(a.min, b.min) + Math.min(a.max, b.max)) / 2;
    const key = (n: FlowNode, side: string) => `${n.id}|${side}|${r.link.member && n.kind !== 'task' ? r.link.member : ''}`;
    ends.push({ route: r, start: true, key: key(from, r.down ? 'bottom' : 'top'), toward: r.columns[0] ?? direct, ...a });
    ends.push({ route: r, start: false, key: key(to, r.down ? 'top' : 'bottom'), toward: r.columns[r.columns.length - 1] ?? direct, ...b });
  }
  const sides = new Map<string, End[]>();
  ends.forEach(e => sides.set(e.key, [...(sides.get(e.key) ?? []), e]));
  for (const list of sides.values()) {
    const { min, max, left, width } = list[0];
    list.sort((p, q) => p.toward - q.toward);
    let xs: number[];
    if ((list.length - 1) * PORT_GAP > max - min) {
      xs = list.map((_, i) => left + (width * (i + 1)) / (list.length + 1));
    } else {
      // each as near its wish as the ones before it allow, then pushed back from the right end
      xs = [];
      list.forEach((e, i) => xs.push(Math.max(Math.min(Math.max(e.toward, min), max), i ? xs[i - 1] + PORT_GAP : min)));
      for (let i = xs.length - 1; i >= 0; i--) {
        xs[i] = Math.min(xs[i], i === xs.length - 1 ? max : xs[i + 1] - PORT_GAP);
      }
    }
    list.forEach((e, i) => {
      if (e.start) {
        e.route.startX = xs[i];
      } else {
        e.route.endX = xs[i];
      }
    });
  }
}

/** An edge through ranks between its ends whose path there (dagre's dummy nodes) lies a few pixels beside one of its
 * ports: run it straight down (up) from that port instead, where that line meets no node of the ranks between. */
function straighten(routes: Route[], nodes: Map<string, FlowNode>, rank: Map<string, number>): boolean {
  let moved = false;
  for (const r of routes) {
    if (!r.columns.length) {
      continue;
    }
    const [a, b] = [rank.get(r.link.from)!, rank.get(r.link.to)!];
    const between = [...nodes.values()].filter(n => rank.get(n.id)! > Math.min(a, b) && rank.get(n.id)! < Math.max(a, b));
    const clear = (x: number) => between.every(n => x < n.x - 4 || x > n.x + n.width + 4);
    for (const x of [r.startX, r.endX]) {
      if (r.columns.every(c => Math.abs(c - x) < PORT_GAP) && clear(x)) {
        moved ||= r.columns.some(c => c !== x);
        r.columns = r.columns.map(() => x);
        break;
      }
    }
  }
  return moved;
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
    const id = clash.port === 'start' ? clash.r.link.from : clash.r.link.to;
    const node = nodes.get(id)!;
    const taken = all.filter(b => b.gap === clash.gap && b !== clash);
    // another port on the same side stays PORT_GAP away (arrowheads never touch); other lines 4 px
    const sibling = (b: (typeof taken)[number]) => b.port !== null && (b.port === 'start' ? b.r.link.from : b.r.link.to) === id;
    const free = [6, -6, 12, -12, 18, -18, 24, -24]
      .map(d => clash.x + d)
      .find(x => x > node.x + 3 && x < node.x + node.width - 3 && taken.every(b => Math.abs(b.x - x) >= (sibling(b) ? PORT_GAP : 4)) &&
        !taken.some(b => sibling(b) && (b.x - clash.x) * (b.x - x) < 0)); // never past another port: their order stays
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

/**
 * A track per horizontal run in each gap, so that no two runs share a line; returns each gap's track count.
 * Runs are stacked so that none crosses the vertical by which another enters or leaves the gap where that can be
 * helped: a run whose line comes down into the gap inside another's span goes above it (turns off before the
 * other passes), one whose line goes on down inside another's span below it. Lines straight through a gap take
 * its middle track.
 */
function assignTracks(routes: Route[], gaps: number): number[] {
  type Run = { route: Route; i: number; top: number; bottom: number; lo: number; hi: number; track: number };
  const runs: Run[][] = Array.from({ length: Math.max(gaps, 0) }, () => []);
  for (const r of routes) {
    const xs = [r.startX, ...r.columns, r.endX];
    r.gaps.forEach((k, i) => {
      r.tracks[i] = 0;
      runs[k].push({ route: r, i, top: r.down ? xs[i] : xs[i + 1], bottom: r.down ? xs[i + 1] : xs[i], lo: Math.min(xs[i], xs[i + 1]), hi: Math.max(xs[i], xs[i + 1]), track: -1 });
    });
  }
  const inside = (x: number, r: Run) => x > r.lo + 0.5 && x < r.hi - 0.5;
  return runs.map(list => {
    const bent = list.filter(r => r.hi - r.lo >= 0.5).sort((a, b) => a.lo - b.lo || a.hi - b.hi);
    const above = new Map<Run, Run[]>(bent.map(r => [r, []]));
    for (const a of bent) {
      for (const b of bent) {
        if (a !== b && inside(a.top, b) && !inside(a.bottom, b)) {
          above.get(b)!.push(a);
        } else if (a !== b && inside(a.bottom, b) && !inside(a.top, b)) {
          above.get(a)!.push(b);
        }
      }
    }
    // stack in an order that puts every run after the runs it must be under (a cycle is broken at its leftmost)
    const left = new Set(bent);
    const tracks: Run[][] = [];
    while (left.size) {
      const run = [...left].find(r => above.get(r)!.every(a => !left.has(a))) ?? [...left][0];
      left.delete(run);
      let t = Math.max(-1, ...above.get(run)!.filter(a => a.track >= 0).map(a => a.track)) + 1;
      while (tracks[t]?.some(o => o.lo < run.hi + 3 && run.lo < o.hi + 3)) {
        t++;
      }
      (tracks[t] ??= []).push(run);
      run.track = t;
      run.route.tracks[run.i] = t;
    }
    for (const run of list.filter(r => r.hi - r.lo < 0.5)) {
      run.route.tracks[run.i] = Math.floor(Math.max(tracks.length - 1, 0) / 2);
    }
    return Math.max(tracks.length, 1);
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
