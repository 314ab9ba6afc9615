// Arrow keys for the ReplayPlayer: focus this strip (click or Tab), then Left/Right step the trace.
function render({ model, el }) {
  el.tabIndex = 0;
  el.setAttribute("data-lm-suppress-shortcuts", "true");
  el.textContent = "\u2190 \u2192 keys";
  el.title = "click here, then step with the Left/Right arrow keys (Home/End: first/last step)";
  el.style.cssText = "font-size:11px;color:#57606a;padding:2px 6px;border:1px dashed #d0d7de;" +
    "border-radius:4px;cursor:pointer;user-select:none;width:fit-content";
  el.addEventListener("keydown", (event) => {
    const delta = { ArrowLeft: -1, ArrowRight: 1, Home: -1e9, End: 1e9 }[event.key];
    if (delta === undefined) return;
    event.preventDefault();
    event.stopPropagation();
    model.send({ delta });  // one message per press: no synced state to race with its echo
  });
  el.addEventListener("focus", () => { el.style.borderColor = "#0969da"; });
  el.addEventListener("blur", () => { el.style.borderColor = "#d0d7de"; });
}
export default { render };
