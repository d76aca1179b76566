// toolscore HTML report: sorts the tool table, filters and expands the case
// list. All text from the data goes through textContent (never innerHTML).
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('data').textContent);
  var SVG = 'http://www.w3.org/2000/svg';

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function fmt(s) { return s === null || s === undefined ? 'error' : (Math.round(s * 1000) / 1000).toString(); }
  function fmtMs(v) { return v >= 1000 ? (v / 1000).toFixed(2) + ' s' : (Math.round(v * 10) / 10) + ' ms'; }
  // JSON with object keys sorted, for comparing values.
  function canon(v) {
    if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
    if (v && typeof v === 'object') {
      return '{' + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ':' + canon(v[k]); }).join(',') + '}';
    }
    return JSON.stringify(v);
  }
  function isObj(v) { return v && typeof v === 'object' && !Array.isArray(v); }
  // An expectation's arguments are met when every expected key is there and equal.
  function argsOk(want, got) {
    if (want === null || want === undefined) return true;
    if (isObj(want) && isObj(got)) {
      return Object.keys(want).every(function (k) { return k in got && canon(want[k]) === canon(got[k]); });
    }
    return canon(want) === canon(got);
  }

  // ---- sortable tables ----
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (t) {
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      th.tabIndex = 0;
      th.title = 'sort';
      var go = function () { sortBy(t, i, th); };
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (ev) { if (ev.key === 'Enter') go(); });
    });
  });
  function sortBy(t, i, th) {
    var text = th.dataset.type === 'text';
    var cur = th.getAttribute('aria-sort');
    // Numbers sort largest first on the first click, names A to Z.
    var dir = cur ? (cur === 'ascending' ? -1 : 1) : (text ? 1 : -1);
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (c) { c.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var body = t.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[i].dataset.v, y = b.cells[i].dataset.v;
      if (!text) { x = +x; y = +y; }
      return (x < y ? -1 : x > y ? 1 : 0) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  // ---- case list ----
  var list = document.getElementById('cases');
  var fFailed = document.getElementById('f-failed');
  var fMetric = document.getElementById('f-metric');
  var fText = document.getElementById('f-text');
  var fCount = document.getElementById('f-count');
  D.metrics.forEach(function (m) {
    var o = el('option', null, m);
    o.value = m;
    fMetric.appendChild(o);
  });

  var rows = D.cases.map(function (c) {
    // A trace's case carries its id only; a session's, its label and traces.
    if (!c.traces) c.traces = c.trace ? [c.trace] : [];
    if (!c.target) c.target = c.trace || '';
    // A judge error or a dry run is shown as such, not as the agent failing.
    var verdict = c.verdict || (c.pass ? 'pass' : 'fail');
    var vclass = verdict === 'pass' ? 'pass' : verdict === 'fail' ? 'fail' : 'unjudged';
    var d = el('details', 'case ' + vclass);
    d.dataset.case = c.case;
    if (c.trace) d.dataset.trace = c.trace;
    d.dataset.pass = c.pass ? '1' : '0';
    var s = el('summary');
    s.appendChild(el('span', 'badge ' + vclass, verdict.replace('_', ' ')));
    s.appendChild(el('span', 'cid', c.case));
    s.appendChild(el('span', 'target', c.target));
    var sc = el('span', 'scores');
    c.results.forEach(function (r) {
      var b = el('span', 'score ' + (r[2] ? 'pass' : 'fail'), r[0] + ' ' + fmt(r[1]));
      if (r[4]) b.title = r[4];
      sc.appendChild(b);
    });
    s.appendChild(sc);
    if (c.baseline) {
      var bl = c.baseline[0] + (c.baseline[1] !== null && c.baseline[1] !== undefined && c.baseline[1] !== 0 ?
        ' ' + (c.baseline[1] > 0 ? '+' : '') + fmt(c.baseline[1]) : '');
      s.appendChild(el('span', 'vs ' + c.baseline[0], bl));
    }
    // A failure's reason is visible without opening it.
    if (!c.pass) {
      var why = c.reason || (c.results.filter(function (r) { return !r[2]; })[0] || [])[3] || '';
      if (why) s.appendChild(el('span', 'why', why));
    }
    d.appendChild(s);
    d.addEventListener('toggle', function () {
      if (d.open && !d.dataset.built) {
        d.dataset.built = '1';
        d.appendChild(caseBody(c));
      }
    });
    c.search = [c.case, c.target].concat(
      c.traces,
      c.called.map(function (x) { return x[0]; }),
      c.expected.map(function (x) { return x[0]; }),
      c.results.map(function (r) { return (r[3] || '') + ' ' + (r[4] || ''); }),
      [c.reason || '', c.request || '']
    ).join('\n').toLowerCase();
    list.appendChild(d);
    return d;
  });

  function apply() {
    var failed = fFailed.checked, m = fMetric.value, q = fText.value.trim().toLowerCase();
    var shown = 0;
    D.cases.forEach(function (c, i) {
      var ok = true;
      if (m) {
        var r = c.results.filter(function (r) { return r[0] === m; })[0];
        // With a metric chosen, "failed" means failed on that metric.
        ok = !!r && !(failed && r[2]);
      } else if (failed && c.pass) {
        ok = false;
      }
      if (ok && q && c.search.indexOf(q) < 0) ok = false;
      rows[i].hidden = !ok;
      if (ok) shown++;
    });
    fCount.textContent = shown + ' of ' + D.cases.length + ' case(s) shown';
  }
  fFailed.addEventListener('change', apply);
  fMetric.addEventListener('change', apply);
  fText.addEventListener('input', apply);
  apply();

  function caseBody(c) {
    var b = el('div', 'body');
    if (c.request) {
      b.appendChild(el('h3', null, 'Request'));
      b.appendChild(el('div', 'request', c.request));
    }
    b.appendChild(el('h3', null, 'Explanation'));
    var ul = el('ul', 'explain');
    if (c.reason) ul.appendChild(el('li', 'err', c.reason));
    c.results.forEach(function (r) {
      var li = el('li');
      li.appendChild(el('span', 'metric', r[0]));
      var verdict = ' — ' + fmt(r[1]) + (r[5] !== null && r[5] !== undefined ? ' (threshold ' + r[5] + ')' : '') +
        (r[2] ? ', pass' : ', fail') + (r[3] ? ': ' : '');
      li.appendChild(document.createTextNode(verdict));
      if (r[3]) li.appendChild(document.createTextNode(r[3]));
      if (r[4]) li.appendChild(el('div', 'err', 'error: ' + r[4]));
      ul.appendChild(li);
    });
    b.appendChild(ul);
    if (c.expected.length || c.called.length) {
      b.appendChild(el('h3', null, 'Expected vs called'));
      b.appendChild(callsTable(c));
    }
    if (c.traces.length) {
      b.appendChild(el('h3', null, 'Timeline'));
      b.appendChild(timelines(c));
    }
    return b;
  }

  // Pairs each expectation with a call: first one of the same name whose
  // arguments meet it, else one of the same name (wrong arguments).
  function pairs(c) {
    var used = c.called.map(function () { return false; });
    var match = c.expected.map(function () { return -1; });
    [true, false].forEach(function (strict) {
      c.expected.forEach(function (e, j) {
        if (match[j] >= 0) return;
        for (var i = 0; i < c.called.length; i++) {
          if (!used[i] && c.called[i][0] === e[0] && (!strict || argsOk(e[1], c.called[i][1]))) {
            used[i] = true; match[j] = i; return;
          }
        }
      });
    });
    var byCall = {};
    match.forEach(function (i, j) { if (i >= 0) byCall[i] = j; });
    var out = [];
    c.called.forEach(function (call, i) {
      out.push({ e: i in byCall ? c.expected[byCall[i]] : null, c: call });
    });
    match.forEach(function (i, j) { if (i < 0) out.push({ e: c.expected[j], c: null }); });
    return out;
  }

  function argsView(args, other, side) {
    var pre = el('div', 'args');
    if (args === null || args === undefined) {
      pre.appendChild(el('span', 'k', side === 'e' ? '(any arguments)' : '(no arguments)'));
      return pre;
    }
    if (isObj(args) && '$truncated' in args) {
      pre.textContent = args.$truncated + ' (shortened)';
      return pre;
    }
    if (!isObj(args)) {
      var t = el('span', null, JSON.stringify(args));
      if (other !== undefined && canon(args) !== canon(other)) t.className = 'diff';
      pre.appendChild(t);
      return pre;
    }
    Object.keys(args).forEach(function (k, n) {
      if (n) pre.appendChild(document.createTextNode('\n'));
      var line = el('span');
      line.appendChild(el('span', 'k', k + ': '));
      line.appendChild(document.createTextNode(JSON.stringify(args[k])));
      // Differing: an expected key absent or unequal in the call, on both sides.
      var want = side === 'e' ? args : other, got = side === 'e' ? other : args;
      if (isObj(want) && k in want && (!isObj(got) || !(k in got) || canon(want[k]) !== canon(got[k]))) {
        line.className = 'diff';
      }
      pre.appendChild(line);
    });
    if (side === 'c' && isObj(other)) {
      Object.keys(other).forEach(function (k) {
        if (!(k in args)) {
          pre.appendChild(document.createTextNode('\n'));
          var miss = el('span', 'diff');
          miss.appendChild(el('span', 'k', k + ': '));
          miss.appendChild(document.createTextNode('(absent)'));
          pre.appendChild(miss);
        }
      });
    }
    return pre;
  }

  function callsTable(c) {
    var t = el('table', 'calls');
    var h = t.createTHead().insertRow();
    h.appendChild(el('th', null, 'Expected'));
    h.appendChild(el('th', null, 'Called'));
    h.appendChild(el('th', 'st', ''));
    var body = t.createTBody();
    pairs(c).forEach(function (p) {
      var r = body.insertRow();
      var te = r.insertCell(), tc = r.insertCell(), ts = r.insertCell();
      var st, stc;
      if (p.e && p.c) {
        var ok = argsOk(p.e[1], p.c[1]);
        st = ok ? 'ok' : 'wrong arguments'; stc = ok ? 'ok' : 'wrong';
      } else if (p.e) { st = 'missing'; stc = 'missing'; } else { st = 'unexpected'; stc = 'unexpected'; }
      if (p.e) {
        te.appendChild(el('div', 'callname', p.e[0]));
        te.appendChild(argsView(p.e[1], p.c ? p.c[1] : undefined, 'e'));
      } else {
        te.appendChild(el('div', 'none', '-'));
      }
      // A tool never called: a dash, not an empty cell.
      if (!p.c) tc.appendChild(el('div', 'none', '-'));
      if (p.c) {
        var name = el('div', 'callname', p.c[0]);
        tc.appendChild(name);
        var meta = fmtMs(p.c[5]) + (p.c[6] ? ' · agent ' + p.c[6] : '');
        tc.appendChild(el('div', 'hint', meta));
        tc.appendChild(argsView(p.c[1], p.e ? p.e[1] : undefined, 'c'));
        if (p.c[2]) {
          tc.appendChild(el('div', 'errmsg', 'error' + (p.c[3] ? ': ' + p.c[3] : '')));
          if (stc === 'ok') { st = 'ok (call failed)'; stc = 'error'; }
        }
      }
      ts.className = 'st ' + stc;
      ts.textContent = st;
    });
    return t;
  }

  function timelines(c) {
    var box = el('div');
    var legend = el('div', 'legend');
    [['s', 'span'], ['t', 'tool call'], ['a', 'agent run']].forEach(function (x) {
      var s = el('span');
      var i = el('i');
      i.style.background = 'var(--' + (x[0] === 's' ? 'span' : x[0] === 't' ? 'tool' : 'agent') + ')';
      s.appendChild(i);
      s.appendChild(document.createTextNode(x[1]));
      legend.appendChild(s);
    });
    box.appendChild(legend);
    var shown = c.traces.slice(0, 5);
    shown.forEach(function (id) {
      if (c.traces.length > 1) box.appendChild(el('div', 'hint', 'trace ' + id));
      var tl = D.timelines[id];
      var spans, note;
      if (tl) {
        spans = tl.spans;
        if (tl.total > spans.length) {
          note = 'First ' + spans.length + ' of ' + tl.total + ' spans shown (the page keeps at most ' + D.timeline_spans + ' per trace).';
        }
      } else {
        // No span timing kept (e.g. a report written by serve): the calls alone.
        spans = c.called.map(function (x) { return [x[0], x[4], x[5], 0, 't', x[2] ? 1 : 0]; });
        note = 'Span timing was not kept for this report: tool calls only.';
      }
      if (spans.length) box.appendChild(timelineSvg(spans));
      if (note) box.appendChild(el('div', 'note', note));
    });
    if (c.traces.length > shown.length) {
      box.appendChild(el('div', 'note', (c.traces.length - shown.length) + ' more trace(s) of this session not drawn.'));
    }
    return box;
  }

  function timelineSvg(spans) {
    var W = 1000, L = 300, R = 16, RH = 17, TOP = 22;
    var end = 0;
    spans.forEach(function (s) { end = Math.max(end, s[1] + s[2]); });
    if (end <= 0) end = 1;
    var H = TOP + spans.length * RH + 6;
    var svg = sv('svg', { 'class': 'timeline', viewBox: '0 0 ' + W + ' ' + H });
    var scale = (W - L - R) / end;
    for (var k = 0; k <= 4; k++) {
      var x = L + (W - L - R) * k / 4;
      svg.appendChild(sv('line', { 'class': 'grid', x1: x, y1: TOP - 4, x2: x, y2: H }));
      svg.appendChild(sv('text', { 'class': 'tick', x: Math.min(x, W - 30), y: 13 }, fmtMs(end * k / 4)));
    }
    spans.forEach(function (s, i) {
      var y = TOP + i * RH;
      var name = s[0].length > 38 ? s[0].slice(0, 37) + '…' : s[0];
      svg.appendChild(sv('text', { x: 4 + Math.min(s[3], 12) * 8, y: y + 12 }, name));
      var cls = (s[4] === 't' ? 't' : s[4] === 'a' ? 'a' : 's') + (s[5] ? ' e' : '');
      var r = sv('rect', { 'class': cls, x: L + s[1] * scale, y: y + 2, width: Math.max(2, s[2] * scale), height: RH - 5, rx: 2 });
      r.appendChild(sv('title', {}, s[0] + ' — starts ' + fmtMs(s[1]) + ', lasts ' + fmtMs(s[2]) + (s[5] ? ', error' : '')));
      svg.appendChild(r);
    });
    return svg;
  }

  // ---- traces no case matched ----
  if (D.unmatched_traces.length) {
    var d = el('details');
    d.appendChild(el('summary', null, D.unmatched_traces.length + ' trace(s) matched no case'));
    var ul = el('ul');
    D.unmatched_traces.forEach(function (t) {
      ul.appendChild(el('li', null, t[0] + ' — ' + t[1] + ' span(s); calls: ' + (t[2].join(', ') || 'none')));
    });
    d.appendChild(ul);
    document.getElementById('unmatched').appendChild(d);
  }
})();
