// Runs first, in the document head. Records script errors and any call to alert/confirm/prompt as
// attributes of the body / root elements, so a headless browser's DOM dump can tell whether the page
// rendered cleanly and whether any injected script ran. The report itself never calls alert.
(function () {
  var errors = [];
  function mark() {
    var el = document.body || document.documentElement;
    el.setAttribute('data-errors', String(errors.length));
    if (errors.length) el.setAttribute('data-error-messages', errors.join(' | ').slice(0, 2000));
  }
  window.__ptErrors = errors;
  window.__ptMarkErrors = mark;
  window.addEventListener('error', function (e) {
    errors.push(String(e && e.message ? e.message : e));
    mark();
  });
  window.addEventListener('unhandledrejection', function (e) {
    errors.push('unhandled rejection: ' + String(e && e.reason));
    mark();
  });
  function trap(name) {
    return function () {
      document.documentElement.setAttribute('data-dialog-called', name);
    };
  }
  window.alert = trap('alert');
  window.confirm = trap('confirm');
  window.prompt = trap('prompt');
})();
