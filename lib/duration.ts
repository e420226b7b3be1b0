/** Formats milliseconds as a Go-style duration string: 1h2m3.5s, 4m0s, 850ms. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.floor(ms)}ms`
  const h = Math.floor(ms / 3_600_000)
  const m = Math.floor((ms % 3_600_000) / 60_000)
  const s = (ms % 60_000) / 1000
  const sec = `${Number.isInteger(s) ? s : s.toFixed(3).replace(/0+$/, '')}s`
  return (h ? `${h}h${m}m` : m ? `${m}m` : '') + sec
}
