// Filters for the episodes of a colbench report: by run, status, outcome and task id.
(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) { return; }
  var episodes = Array.prototype.slice.call(document.querySelectorAll("details.episode"));
  var shown = document.getElementById("shown");
  function apply() {
    var run = form.elements.run.value, status = form.elements.status.value;
    var outcome = form.elements.outcome.value;
    var query = form.elements.task.value.trim().toLowerCase();
    var count = 0;
    episodes.forEach(function (ep) {
      var keep = (run === "all" || ep.dataset.run === run) &&
        (status === "all" || ep.dataset.status === status) &&
        (outcome === "all" || ep.dataset.outcome === outcome) &&
        (!query || ep.dataset.task.toLowerCase().indexOf(query) !== -1);
      ep.hidden = !keep;
      if (keep) { count += 1; }
    });
    shown.textContent = count + " of " + episodes.length + " episodes shown";
  }
  form.addEventListener("input", apply);
  form.addEventListener("change", apply);
  document.getElementById("expand").addEventListener("click", function () {
    episodes.forEach(function (ep) { if (!ep.hidden) { ep.open = true; } });
  });
  document.getElementById("collapse").addEventListener("click", function () {
    episodes.forEach(function (ep) { ep.open = false; });
  });
  apply();
}());
