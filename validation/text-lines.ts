// The content's lines as offsets into one text: nothing is split or copied until
// a line's own text is needed (RE2 matches line by line; the native engine and
// the literal scan search the whole text and map offsets back to lines).

/** The content split into lines (LF, CRLF or CR); a final line break does not start another line; "" has none. */
export class Lines {
  readonly text: string
  readonly count: number
  /** Where each line starts, then one past the last line's end plus one (so end(i) is always starts[i + 1] - 1). */
  private readonly starts: number[] = []

  constructor(content: string) {
    this.text = content.includes('\r') ? content.replace(/\r\n?/g, '\n') : content
    const text = this.text
    if (text === '') {
      this.count = 0
      this.starts.push(1)
      return
    }
    this.starts.push(0)
    for (let at = text.indexOf('\n'); at >= 0 && at < text.length - 1; at = text.indexOf('\n', at + 1)) this.starts.push(at + 1)
    this.count = this.starts.length
    this.starts.push(text.length + (text.endsWith('\n') ? 0 : 1))
  }

  /** Offset where line `i` starts. */
  start(i: number): number {
    return this.starts[i]
  }

  /** Offset just past line `i` (its \n, or the end of the text). */
  end(i: number): number {
    return this.starts[i + 1] - 1
  }

  line(i: number): string {
    return this.text.slice(this.starts[i], this.starts[i + 1] - 1)
  }

  /** Lines from..to-1 as one text, joined by \n. */
  block(from: number, to: number): string {
    return this.text.slice(this.starts[from], this.starts[to] - 1)
  }

  /**
   * Index of the line holding text offset `offset` (a line's end, its \n, belongs to
   * it), or -1 past the last line. `from` is a line known to start at or before it:
   * searches go forward, and the offset is most often in that line or the next.
   */
  lineAt(offset: number, from = 0): number {
    if (this.count === 0 || offset > this.end(this.count - 1)) return -1
    if (offset < this.starts[from + 1]) return from
    if (offset < this.starts[from + 2]) return from + 1
    let lo = from + 2
    let hi = this.count - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (this.starts[mid] <= offset) lo = mid
      else hi = mid - 1
    }
    return lo
  }
}
