// A stacked bar chart in hand-written SVG, drawn at the container's real pixel
// width so text stays crisp; each segment carries a <title> tooltip.

const NS = 'http://www.w3.org/2000/svg'

export const PALETTE = ['#4f5bd5', '#2a9d8f', '#e9a23b', '#d1495b', '#7b61ff', '#3d9be9', '#8ab17d', '#9aa3b2']

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag)
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v))
  if (text !== undefined) el.textContent = text
  return el
}

/** A round tick step (1, 2 or 5 times a power of ten) giving about `ticks` steps up to max. */
function niceStep(max, ticks) {
  const raw = max > 0 ? max / ticks : 1
  const p = 10 ** Math.floor(Math.log10(raw))
  for (const m of [1, 2, 5]) if (m * p >= raw) return m * p
  return 10 * p
}

/**
 * buckets: [{label, title, values: {series: number}}] in time order;
 * series: [{name, color}] bottom to top; format: number → tooltip text;
 * axis: (value, step) → y-axis label text.
 */
export function stackedBars(container, { buckets, series, format, axis = format, height = 220 }) {
  const width = Math.max(280, Math.floor(container.clientWidth || 600))
  const pad = { top: 12, right: 10, bottom: 26, left: 58 }
  const plotW = width - pad.left - pad.right
  const plotH = height - pad.top - pad.bottom
  const totals = buckets.map((b) => series.reduce((s, x) => s + (b.values[x.name] || 0), 0))
  const step = niceStep(Math.max(0, ...totals), 4)
  const steps = Math.max(1, Math.ceil(Math.max(0, ...totals) / step - 1e-9))
  const top = step * steps
  const y = (v) => pad.top + plotH - (v / top) * plotH

  const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'Cost over time' })
  for (let i = 0; i <= steps; i++) {
    const v = step * i
    root.append(svg('line', { class: 'grid-line', x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }))
    root.append(svg('text', { class: 'axis-label', x: pad.left - 8, y: y(v) + 4, 'text-anchor': 'end' }, axis(v, step)))
  }

  const band = plotW / Math.max(1, buckets.length)
  const barW = Math.max(2, Math.min(40, band * 0.72))
  const labelEvery = Math.ceil(buckets.length / Math.max(1, Math.floor(plotW / 70)))
  buckets.forEach((b, i) => {
    const x = pad.left + band * i + (band - barW) / 2
    let base = 0
    for (const s of series) {
      const v = b.values[s.name] || 0
      if (v <= 0) continue
      const rect = svg('rect', { x, y: y(base + v), width: barW, height: Math.max(1, y(base) - y(base + v)), fill: s.color, rx: 1.5 })
      rect.append(svg('title', {}, `${b.title} · ${s.name}: ${format(v)}`))
      root.append(rect)
      base += v
    }
    if (i % labelEvery === 0)
      root.append(svg('text', { class: 'axis-label', x: pad.left + band * i + band / 2, y: height - 8, 'text-anchor': 'middle' }, b.label))
  })
  container.replaceChildren(root)
}
