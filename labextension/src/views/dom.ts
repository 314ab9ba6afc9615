/** Tiny DOM helpers shared by the views: elements with attributes and children, numbers as people read them. */

type Child = Node | string | null | undefined | false;

export function h(tag: string, attrs: Record<string, string | number> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function s(tag: string, attrs: Record<string, string | number> = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el: Element, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    el.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** `text` that may break after each underscore and nowhere else inside a word
 * (`get_and_advance_work_tile` -> `get_and_` / `advance_work_tile`, never `stage_accumulator s`). */
export function breakable(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  text.split('_').forEach((part, i, parts) => {
    out.append(i < parts.length - 1 ? `${part}_` : part);
    if (i < parts.length - 1) {
      out.append(document.createElement('wbr'));
    }
  });
  return out;
}

/** 232448 -> "232,448" (the Python views' `:,` format). */
export function num(value: number): string {
  return value.toLocaleString('en-US');
}

export const FAULT_COLOUR = '#cf222e';
export const SAFE_COLOUR = '#1a7f37';
