// report.html: draws the sweep's tables and charts from the JSON blob in #report-data (written by
// host/analysis/report_page.cpp) with Chart.js, which the page embeds. When done, each chart's card holds
// data-datasets (how many datasets Chart.js drew) and <html> data-ready="1": the page test reads both.
'use strict';
(() => {
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const root = document.getElementById('report');

  // Tableau 10: distinct for the usual colour blindnesses, and readable on white.
  const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
                   '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  // Series of one colour (one strategy at several learning rates, say) differ by dash and marker.
  const DASHES = [[], [7, 4], [2, 3], [10, 3, 2, 3]];
  const MARKERS = ['circle', 'rect', 'triangle', 'rectRot'];
  const colourOf = new Map(data.colour_keys.map((key, i) => [key, PALETTE[i % PALETTE.length]]));

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    for (const child of children)
      if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  // The report's texts use markdown's **bold** and `code` (report_section.hpp); nothing else is markup.
  function inline(text) {
    const span = el('span');
    const escaped = String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    span.innerHTML = escaped.replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>').replace(/`([^`]+)`/g, '<code>$1</code>');
    return span;
  }

  function traceLink(id, text) {
    const path = data.traces[id];
    return path ? el('a', {href: path, title: 'trace of cell ' + id + ': open it in ui.perfetto.dev'}, text || id) : null;
  }

  // ---- Tables: click a header to sort by that column (again: the other way) ----
  // A cell's number: "1234", "1.2e+06", "1234 [1200, 1260]" (a median and its interval); null for the rest
  // ("not reached", "-", a cell id that starts with a digit), which sorts as text.
  const NUMBER = /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?(\s*\[[^\]]*\])?\s*$/i;
  const number = (text) => (NUMBER.test(String(text)) ? parseFloat(text) : null);

  function compareCells(a, b) {
    const x = number(a), y = number(b);
    if (x !== null && y !== null) return x - y;
    if (x !== null || y !== null) return x !== null ? -1 : 1;  // numbers before words ("not reached", "-")
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }

  function sortable(table, rows, drawRow) {
    const body = el('tbody');
    const draw = (order) => {
      body.replaceChildren(...order.map(drawRow));
    };
    const headers = table.querySelectorAll('th');
    headers.forEach((th, column) => {
      th.addEventListener('click', () => {
        const descending = th.getAttribute('aria-sort') === 'ascending';
        headers.forEach((h) => h.removeAttribute('aria-sort'));
        th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
        const order = rows.slice().sort((r, s) => compareCells(r.cells[column], s.cells[column]));
        draw(descending ? order.reverse() : order);
      });
    });
    draw(rows);
    table.append(body);
    return table;
  }

  function textTable(columns, rows, cellNode) {
    const table = el('table', {class: 'sortable'},
                     el('thead', {}, el('tr', {}, ...columns.map((c) => el('th', {title: 'sort by ' + c}, c)))));
    const wrapped = rows.map((cells, index) => ({cells, index}));
    return sortable(table, wrapped, (row) => el('tr', {},
        ...row.cells.map((text, c) => {
          const td = el('td', {}, cellNode ? cellNode(row, c, text) : inline(text));
          if (number(text) !== null && c > 0) td.className = 'num';
          return td;
        })));
  }

  function resultsTable() {
    const r = data.results;
    const statusColumn = r.columns.indexOf('status');
    const columns = r.columns.concat(['trace']);
    const rows = r.rows.map((cells, i) => cells.concat([data.traces[r.ids[i]] ? 'trace.json' : '-']));
    return textTable(columns, rows, (row, c, text) => {
      if (c === columns.length - 1) return traceLink(r.ids[row.index], 'trace.json') || '-';
      if (c === statusColumn) return el('span', {class: 'status status-' + text}, text);
      return String(text);
    });
  }

  // ---- Charts ----
  const exact = (v) => (typeof v === 'number' ? String(v) : '-');

  // Vertical bars with caps at each point's 95% interval (Chart.js has none of its own).
  const errorBars = {
    id: 'errorBars',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      const y = chart.scales.y;
      chart.data.datasets.forEach((ds, i) => {
        if (!ds.errors || !chart.isDatasetVisible(i)) return;
        const points = chart.getDatasetMeta(i).data;
        ctx.save();
        ctx.strokeStyle = ds.borderColor;
        ctx.lineWidth = 1.5;
        ds.errors.forEach(([low, high], k) => {
          // A point without repeats has no interval (low = high = the value): no bar.
          if (!points[k] || typeof low !== 'number' || typeof high !== 'number' || low === high) return;
          const x = points[k].x, top = y.getPixelForValue(high), bottom = y.getPixelForValue(low);
          ctx.beginPath();
          ctx.moveTo(x, top); ctx.lineTo(x, bottom);
          ctx.moveTo(x - 4, top); ctx.lineTo(x + 4, top);
          ctx.moveTo(x - 4, bottom); ctx.lineTo(x + 4, bottom);
          ctx.stroke();
        });
        ctx.restore();
      });
    },
  };

  // The position of each series among those of its colour, for its dash and marker.
  function styles(series) {
    const seen = new Map();
    return series.map((s, i) => {
      const key = s.colour_key || s.title;
      const colour = colourOf.get(key) || PALETTE[i % PALETTE.length];
      const nth = seen.get(colour) || 0;
      seen.set(colour, nth + 1);
      return {colour, dash: DASHES[nth % DASHES.length], marker: MARKERS[nth % MARKERS.length]};
    });
  }

  function openTraceOf(ids) {
    const path = ids && ids.length === 1 ? data.traces[ids[0]] : null;
    if (path) window.location.href = path;
  }

  function lineConfig(c) {
    const look = styles(c.series);
    const xs = [...new Set(c.series.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
    let low = Infinity, high = -Infinity;
    c.series.forEach((s) => (s.errors || []).forEach(([l, h]) => { low = Math.min(low, l); high = Math.max(high, h); }));
    const datasets = c.series.map((s, i) => ({
      label: s.title,
      data: s.points.map(([x, y]) => ({x, y})),
      errors: s.errors && s.errors.length ? s.errors : null,
      cells: s.cells,
      showLine: s.style !== 'points',
      borderColor: look[i].colour,
      backgroundColor: look[i].colour,
      borderDash: look[i].dash,
      pointStyle: look[i].marker,
      pointRadius: c.points || s.style === 'points' ? 4 : 0,
      pointHoverRadius: 6,
      pointHitRadius: 6,
      borderWidth: 2,
    }));
    // Node and rank counts: ticks at the counts measured, and room beside the first and last.
    const ticksAtData = (axis) => { axis.ticks = xs.map((value) => ({value})); };
    const span = xs.length ? xs[xs.length - 1] - xs[0] : 0;
    const pad = c.log_x ? 1.15 : Math.max(span, 1) * 0.06;
    const room = (c.integer_x || c.log_x) && xs.length
      ? {min: c.log_x ? xs[0] / pad : xs[0] - pad, max: c.log_x ? xs[xs.length - 1] * pad : xs[xs.length - 1] + pad}
      : {};
    return {
      type: 'scatter',
      data: {datasets},
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: c.points ? {mode: 'nearest', intersect: true} : {mode: 'nearest', axis: 'x', intersect: false},
        scales: {
          x: {type: c.log_x ? 'logarithmic' : 'linear', title: {display: true, text: c.xlabel}, ...room,
              afterBuildTicks: c.integer_x || c.log_x ? ticksAtData : undefined},
          y: {beginAtZero: c.y_from_zero, title: {display: true, text: c.ylabel},
              suggestedMin: Number.isFinite(low) && !c.y_from_zero ? low : undefined,
              suggestedMax: Number.isFinite(high) ? high : undefined},
        },
        plugins: {
          legend: {position: 'bottom', labels: {usePointStyle: true, boxHeight: 7}},
          tooltip: {callbacks: {
            title: (items) => items.length ? c.xlabel + ' ' + exact(items[0].raw.x) : '',
            label: (item) => {
              const e = item.dataset.errors ? item.dataset.errors[item.dataIndex] : null;
              return item.dataset.label + ': ' + exact(item.raw.y) + (e ? ' [' + exact(e[0]) + ', ' + exact(e[1]) + ']' : '');
            },
          }},
        },
        onClick: (event, elements, chart) => {
          if (elements.length) openTraceOf(chart.data.datasets[elements[0].datasetIndex].cells);
        },
      },
      plugins: [errorBars],
    };
  }

  function barConfig(c) {
    const datasets = c.series.map((s, i) => ({
      label: s.title,
      data: s.points.map((p) => p[1]),
      backgroundColor: PALETTE[i % PALETTE.length],
      borderColor: '#ffffff',
      borderWidth: 1,
    }));
    return {
      type: 'bar',
      // A bar's label is what differs between the cells, one axis a line.
      data: {labels: c.bar_labels.map((label) => label.split(' ')), datasets},
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        interaction: {mode: 'index', intersect: false},
        scales: {
          x: {stacked: true, title: {display: true, text: c.xlabel}},
          y: {stacked: true, beginAtZero: true, title: {display: true, text: c.ylabel}},
        },
        plugins: {
          legend: {position: 'bottom'},
          tooltip: {callbacks: {
            title: (items) => items.length ? c.bar_labels[items[0].dataIndex] : '',
            label: (item) => item.dataset.label + ': ' + exact(item.raw),
            footer: (items) => 'total: ' + exact(items.reduce((sum, item) => sum + item.raw, 0)),
          }},
        },
        onClick: (event, elements) => {
          if (elements.length) openTraceOf([c.bar_cells[elements[0].index]]);
        },
      },
    };
  }

  // Under each chart, the cells behind its lines (or bars), linked to their traces.
  function cellList(c) {
    const entries = c.stacked
      ? c.bar_labels.map((label, b) => [label, [c.bar_cells[b]]])
      : c.series.map((s) => [s.title, s.cells || []]);
    const items = entries.filter(([, ids]) => ids.length).map(([label, ids]) =>
      el('li', {}, label + ': ', ...ids.flatMap((id, k) => [k ? ', ' : '', traceLink(id) || el('code', {}, id)])));
    if (!items.length) return null;
    return el('details', {}, el('summary', {}, 'Cells and their traces'), el('ul', {}, ...items));
  }

  function chartCard(c) {
    const legendRows = c.stacked ? 2 : Math.ceil(c.series.reduce((n, s) => n + s.title.length + 6, 0) / 80);
    const box = el('div', {class: 'chart-box', style: 'height:' + (300 + 20 * legendRows) + 'px'}, el('canvas'));
    const empty = c.series.every((s) => !s.points.length);
    const card = el('figure', {class: 'card', id: 'chart-' + c.id, 'data-chart': c.id},
                    el('figcaption', {}, c.title),
                    empty ? el('p', {class: 'note'}, 'No finished cell has this figure.') : null, box, cellList(c));
    return {card, box};
  }

  // ---- The page ----
  document.title = 'Experiment ' + data.name;
  root.append(el('h1', {}, 'Experiment ' + data.name),
              el('p', {class: 'lead'}, inline(data.summary + ' '),
                 el('a', {href: 'results.csv'}, 'results.csv'), ' has every column of every cell; ',
                 el('a', {href: 'report.md'}, 'report.md'), ' the same report as text.'));
  for (const warning of data.warnings) root.append(el('p', {class: 'warning'}, inline('Warning: ' + warning)));

  if (data.failed.length) {
    root.append(el('h2', {}, 'Failed cells'),
                el('ul', {class: 'failed'}, ...data.failed.map((f) =>
                  el('li', {}, el('code', {}, f.id), ' ', f.group, ' ', el('span', {class: 'status status-failed'}, f.status),
                     f.failure ? ' (' + f.failure + ')' : '', f.reason ? ': ' + f.reason : ''))));
  }

  root.append(el('h2', {}, 'Results'), el('div', {class: 'scroll'}, resultsTable()));

  for (const s of data.sections) {
    root.append(el('h2', {}, s.heading));
    if (s.intro) root.append(el('p', {}, inline(s.intro)));
    if (s.columns.length) root.append(el('div', {class: 'scroll'}, textTable(s.columns, s.rows)));
    if (s.note) root.append(el('p', {class: 'note'}, inline(s.note)));
  }

  root.append(el('h2', {}, 'Charts'),
              el('p', {class: 'note'}, 'Hover for the exact values; click a line or bar to open its cell\'s trace. ' +
                 'One colour per ' + data.colour_by + ' in every chart.'));
  const grid = el('div', {class: 'charts'});
  root.append(grid);
  for (const c of data.charts) {
    const {card, box} = chartCard(c);
    grid.append(card);
    const chart = new Chart(box.querySelector('canvas'), c.stacked ? barConfig(c) : lineConfig(c));
    card.setAttribute('data-datasets', String(chart.data.datasets.length));
  }
  root.append(el('footer', {}, 'Written by gradsweep report. Charts: Chart.js ' + Chart.version +
                 ' (MIT License), embedded in this file: the page needs no network.'));
  document.documentElement.setAttribute('data-ready', '1');
})();
