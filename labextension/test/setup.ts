// jsdom has no DragEvent; @lumino/dragdrop (under @lumino/widgets) subclasses it when loaded.
if (typeof (globalThis as any).DragEvent === 'undefined') {
  (globalThis as any).DragEvent = class DragEvent extends MouseEvent {};
}
