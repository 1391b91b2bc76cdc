// Runs before anything else on report.html: records uncaught errors and console.error calls into
// <html data-errors="[...]">, where a headless browser's --dump-dom shows them (tests/experiment/
// report_html_test.cpp), and where a reader's devtools would otherwise be the only place to see them.
'use strict';
(() => {
  const errors = [];
  const html = document.documentElement;
  const record = (text) => {
    errors.push(String(text));
    html.setAttribute('data-errors', JSON.stringify(errors));
  };
  html.setAttribute('data-errors', '[]');
  window.addEventListener('error', (e) => record(e.message || 'error'));
  window.addEventListener('unhandledrejection', (e) => record('unhandled rejection: ' + e.reason));
  const original = console.error;
  console.error = (...args) => {
    record(args.join(' '));
    original.apply(console, args);
  };
})();
