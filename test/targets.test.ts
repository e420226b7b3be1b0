// lib/targets.ts: which URLs the server may call (webhooks, contract tests).
import { describe, expect, test } from 'bun:test'
import { targetRefusal, type TargetPolicy } from '../lib/targets'

const policy: TargetPolicy = { allowLinkLocal: false, ownPorts: [9800, 9847], ownHosts: ['127.0.0.1'] }
const refused = (url: string, p = policy) => targetRefusal(new URL(url), p)

describe('targetRefusal', () => {
  test('loopback, private and public addresses on other ports are allowed', () => {
    for (const url of ['http://127.0.0.1:3000/', 'http://localhost:8080/', 'http://10.0.0.5/', 'http://192.168.1.2:9800/', 'https://example.com/', 'http://[::1]:81/', 'http://[fd12::1]/'])
      expect([url, refused(url)]).toEqual([url, null])
  })

  test("this server's own ports on any local name are refused, even with link-local allowed", () => {
    for (const url of ['http://127.0.0.1:9800/api/events/publish', 'http://localhost:9847/', 'http://127.0.0.2:9800/', 'http://[::1]:9800/', 'http://0.0.0.0:9800/', 'http://[::]:9847/'])
      for (const p of [policy, { ...policy, allowLinkLocal: true }]) expect(refused(url, p)).toContain('this server')
  })

  test('link-local, unspecified and metadata targets are refused unless allowed, in every spelling', () => {
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/', // 169.254.169.254 as one number
      'http://0xa9.0xfe.0xa9.0xfe/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fe80::1]/',
      'http://[febf::1]/',
      'http://0.0.0.0/',
      'http://[::]/',
      'http://metadata.google.internal./computeMetadata/v1/',
      'http://100.100.100.200/',
      'http://[fd00:ec2::254]/',
    ]
    for (const url of urls) {
      expect([url, refused(url)]).toEqual([url, expect.stringContaining('not allowed')])
      expect([url, refused(url, { ...policy, allowLinkLocal: true })]).toEqual([url, null])
    }
  })
})
