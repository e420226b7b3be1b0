// lib/tasks.ts directly: what a valid task is and which status it takes.
import { describe, expect, test } from 'bun:test'
import { AppError } from '../lib/errors'
import { afterRequeue, checkError, checkQueue, checkTask, dependencyError, initialStatus, requeueError } from '../lib/tasks'

const message = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    return (err as AppError).message
  }
  throw new Error('expected a 400')
}

describe('checkTask', () => {
  test('fills the defaults and drops duplicate ids and capabilities', () => {
    expect(checkTask('q', { title: 't', depends_on: [2, 2, 1], requires: ['a', 'a'] })).toEqual({
      queue: 'q',
      title: 't',
      payload: null,
      priority: 0,
      depends_on: [2, 1],
      requires: ['a'],
      max_attempts: 3,
      dedupe_key: null,
    })
  })

  test('names the first bad field', () => {
    expect(message(() => checkTask('q', {}))).toBe('title is required')
    expect(message(() => checkTask('q', { title: 'x'.repeat(1001) }))).toContain('invalid title')
    expect(message(() => checkTask('q', { title: 't', priority: 2e9 }))).toContain('invalid priority')
    expect(message(() => checkTask('q', { title: 't', depends_on: [0] }))).toContain('invalid depends_on')
    expect(message(() => checkTask('q', { title: 't', depends_on: 'x' }))).toContain('invalid depends_on')
    expect(message(() => checkTask('q', { title: 't', requires: [1] }))).toContain('invalid requires')
    expect(message(() => checkTask('q', { title: 't', max_attempts: 1001 }))).toContain('invalid max_attempts')
    expect(message(() => checkTask('q', { title: 't', dedupe_key: 5 }))).toContain('invalid dedupe_key')
    expect(message(() => checkTask('a/b', { title: 't' }))).toContain('invalid queue')
  })

  test('queue names are letters, digits, "-", "_", "."', () => {
    expect(checkQueue('build.linux_x-1')).toBe('build.linux_x-1')
    for (const bad of ['', 'a b', 'a/b', 'é', 'x'.repeat(201)]) expect(message(() => checkQueue(bad))).toContain('invalid queue')
  })

  test('nack error: a string of at most 10,000 characters', () => {
    expect(checkError(undefined)).toBeNull()
    expect(checkError('boom')).toBe('boom')
    expect(message(() => checkError('x'.repeat(10_001)))).toContain('invalid error')
  })
})

describe('status rules', () => {
  test('a new task is ready when every dependency is done, blocked otherwise, failed when one failed or was cancelled', () => {
    expect(initialStatus([])).toEqual({ status: 'ready' })
    expect(initialStatus([{ id: 1, status: 'done' }, { id: 2, status: 'done' }])).toEqual({ status: 'ready' })
    expect(initialStatus([{ id: 1, status: 'done' }, { id: 2, status: 'claimed' }])).toEqual({ status: 'blocked' })
    expect(initialStatus([{ id: 1, status: 'blocked' }, { id: 2, status: 'cancelled' }])).toEqual({ status: 'failed', last_error: 'dependency 2 was cancelled' })
    expect(dependencyError(7, 'failed')).toBe('dependency 7 failed')
  })

  test('a requeue fails the task once its attempts are spent', () => {
    expect(afterRequeue(1, 3)).toBe('ready')
    expect(afterRequeue(3, 3)).toBe('failed')
    expect(requeueError('nack', 'flaky')).toBe('flaky')
    expect(requeueError('nack')).toBe('nacked without an error')
    expect(requeueError('holder_stale')).toBe('claimer went stale')
    expect(requeueError('timeout')).toContain('visibility timeout')
  })
})
