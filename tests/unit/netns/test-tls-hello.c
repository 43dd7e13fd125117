/* tests/unit/netns/test-tls-hello.c: the ClientHello parser of the egress proxy. Hellos are built
 * here field by field (so that each length can be made to lie), and four were captured from real
 * clients on 127.0.0.1: openssl s_client (TLS 1.3 and TLS 1.2 only), curl and Python's ssl. */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/macro.h"
#include "netns/netns-internal.h"

/* ---- Hellos captured from real clients ----
 * Each was the first bytes the client sent to a recorder on 127.0.0.1, in one record.
 * openssl s_client -connect 127.0.0.1:PORT -servername example.com -alpn h2,http/1.1 */
static const uint8_t openssl_s_client_hello[] = {
    0x16, 0x03, 0x01, 0x01, 0x4a, 0x01, 0x00, 0x01, 0x46, 0x03, 0x03, 0xa5, 0xe9, 0xe3, 0x90, 0xbb,
    0x30, 0xbd, 0x8f, 0x8d, 0x56, 0x09, 0x37, 0x40, 0x5f, 0x2f, 0x67, 0xbc, 0x71, 0x1b, 0x50, 0x4d,
    0xef, 0x9b, 0x93, 0x75, 0x80, 0x1c, 0xd0, 0x42, 0x71, 0xf4, 0x04, 0x20, 0x8b, 0x82, 0x17, 0x58,
    0xcc, 0x16, 0x67, 0x3a, 0x40, 0xb5, 0x18, 0x8d, 0xf7, 0xa6, 0xe4, 0x28, 0x15, 0x6a, 0xc9, 0x6b,
    0xc4, 0x08, 0x1a, 0xaa, 0x86, 0x59, 0xf7, 0x34, 0x27, 0xcd, 0x3f, 0xb0, 0x00, 0x3e, 0x13, 0x02,
    0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
    0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27,
    0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39, 0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d,
    0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0xbf,
    0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00, 0x0b, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65,
    0x2e, 0x63, 0x6f, 0x6d, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16,
    0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01,
    0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x0c,
    0x02, 0x68, 0x32, 0x08, 0x68, 0x74, 0x74, 0x70, 0x2f, 0x31, 0x2e, 0x31, 0x00, 0x16, 0x00, 0x00,
    0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03,
    0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06,
    0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02,
    0x06, 0x02, 0x00, 0x2b, 0x00, 0x09, 0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00,
    0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0xeb,
    0x88, 0x9c, 0xd0, 0xf3, 0xb1, 0xc7, 0x7f, 0x5e, 0xae, 0x1f, 0xfc, 0x93, 0xd5, 0x61, 0xb1, 0x40,
    0xc7, 0x12, 0xc1, 0xb8, 0xa3, 0xa0, 0xe5, 0x5b, 0xb9, 0xe3, 0xb6, 0xb5, 0x59, 0x05, 0x3f,
};

/* curl -s --resolve example.com:PORT:127.0.0.1 https://example.com:PORT/ (curl 7.88.1) */
static const uint8_t curl_hello[] = {
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x3e, 0x66, 0x9d, 0xcd, 0x30,
    0x64, 0x5c, 0x78, 0x83, 0xf8, 0xc1, 0x1d, 0x25, 0xd0, 0xfb, 0x2b, 0xf6, 0x2e, 0x83, 0x49, 0x76,
    0x52, 0x47, 0xa1, 0xad, 0xef, 0x20, 0x1d, 0x97, 0x90, 0x91, 0xbb, 0x20, 0xc7, 0x83, 0x63, 0x47,
    0x30, 0x78, 0xaa, 0xf4, 0x4a, 0x5d, 0xc3, 0x6d, 0xcb, 0x8f, 0x45, 0xe6, 0x30, 0xe4, 0x2c, 0x99,
    0xf6, 0xe2, 0x1c, 0x0d, 0x06, 0x6f, 0xac, 0x1b, 0xcc, 0x23, 0x6e, 0xba, 0x00, 0x3e, 0x13, 0x02,
    0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
    0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27,
    0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39, 0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d,
    0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x01, 0x75,
    0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00, 0x0b, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65,
    0x2e, 0x63, 0x6f, 0x6d, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16,
    0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01,
    0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x0c, 0x02, 0x68, 0x32, 0x08,
    0x68, 0x74, 0x74, 0x70, 0x2f, 0x31, 0x2e, 0x31, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00,
    0x00, 0x31, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03,
    0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06,
    0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02,
    0x06, 0x02, 0x00, 0x2b, 0x00, 0x09, 0x08, 0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00,
    0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0x6d,
    0xd0, 0x33, 0xf7, 0xc6, 0x77, 0xcb, 0x65, 0xdf, 0x3b, 0x29, 0x06, 0x6a, 0xa1, 0xaa, 0x25, 0x47,
    0x9a, 0xdb, 0x5c, 0x32, 0x73, 0x68, 0x20, 0x86, 0xa5, 0x79, 0xda, 0x08, 0xf5, 0x07, 0x12, 0x00,
    0x15, 0x00, 0xb2, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00,
};

/* ssl.create_default_context(), ALPN h2 and http/1.1, server_hostname "example.com" */
static const uint8_t python_ssl_hello[] = {
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x3a, 0xe4, 0x0b, 0xe3, 0xd9,
    0x27, 0xcc, 0x12, 0x1c, 0xd0, 0xc4, 0xcc, 0x0f, 0xaa, 0xb4, 0x6a, 0xae, 0xec, 0xd6, 0x7d, 0x36,
    0x0f, 0x14, 0x13, 0x43, 0x5d, 0x47, 0x41, 0x9a, 0x0c, 0xc9, 0xb5, 0x20, 0x4e, 0x8b, 0xc8, 0x7e,
    0x59, 0x62, 0xd1, 0x34, 0x4b, 0x1f, 0x1e, 0x32, 0x48, 0x40, 0x16, 0x71, 0xdf, 0x42, 0x7f, 0x25,
    0x3f, 0x74, 0xd4, 0x4d, 0xf3, 0x29, 0x11, 0x84, 0x35, 0x0e, 0x76, 0x51, 0x00, 0x24, 0x13, 0x02,
    0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0xc0, 0x2b, 0xc0, 0x2f, 0xcc, 0xa9, 0xcc, 0xa8,
    0xc0, 0x24, 0xc0, 0x28, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x9f, 0x00, 0x9e, 0x00, 0x6b, 0x00, 0x67,
    0x00, 0xff, 0x01, 0x00, 0x01, 0x8f, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00, 0x0b, 0x65,
    0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x63, 0x6f, 0x6d, 0x00, 0x0b, 0x00, 0x04, 0x03, 0x00,
    0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00, 0x19,
    0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00,
    0x00, 0x10, 0x00, 0x0e, 0x00, 0x0c, 0x02, 0x68, 0x32, 0x08, 0x68, 0x74, 0x74, 0x70, 0x2f, 0x31,
    0x2e, 0x31, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28,
    0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b,
    0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01,
    0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02, 0x00, 0x2b, 0x00, 0x05, 0x04, 0x03, 0x04, 0x03,
    0x03, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00,
    0x20, 0x83, 0x8f, 0x2e, 0xc9, 0x53, 0x41, 0x9b, 0x52, 0x4f, 0x2d, 0xbd, 0xda, 0xd6, 0xf4, 0x95,
    0x4d, 0x7b, 0x04, 0x8b, 0xb2, 0x97, 0x0c, 0x06, 0xec, 0x89, 0x20, 0xf7, 0x67, 0xb0, 0xa6, 0x96,
    0x23, 0x00, 0x15, 0x00, 0xd0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00,
};

/* openssl s_client -tls1_2 ... -servername Example.COM -alpn http/1.1 */
static const uint8_t openssl_tls12_hello[] = {
    0x16, 0x03, 0x01, 0x00, 0xda, 0x01, 0x00, 0x00, 0xd6, 0x03, 0x03, 0x9d, 0x37, 0xc4, 0xfb, 0xe1,
    0xed, 0x8b, 0xef, 0xb7, 0x73, 0x5b, 0x40, 0x85, 0xab, 0x5b, 0xbf, 0x23, 0x68, 0x42, 0x2e, 0xe3,
    0xb1, 0x0a, 0x87, 0x70, 0xd9, 0x76, 0x94, 0x47, 0x7c, 0xd3, 0xf2, 0x00, 0x00, 0x38, 0xc0, 0x2c,
    0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa, 0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e,
    0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14,
    0x00, 0x39, 0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c,
    0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0x75, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0e,
    0x00, 0x00, 0x0b, 0x45, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x43, 0x4f, 0x4d, 0x00, 0x0b,
    0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x1d, 0x00, 0x17,
    0x00, 0x1e, 0x00, 0x19, 0x00, 0x18, 0x00, 0x23, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0b, 0x00, 0x09,
    0x08, 0x68, 0x74, 0x74, 0x70, 0x2f, 0x31, 0x2e, 0x31, 0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00,
    0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08, 0x07, 0x08,
    0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05,
    0x01, 0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02,
};

/* ---- A ClientHello builder ---- */

struct raw {
	const char *p;
	size_t len;
};
#define RAW(s) ((struct raw){.p = (s), .len = sizeof(s) - 1})

struct opts {
	uint16_t record_version; /* 0: 0x0301, as clients send */
	uint8_t handshake_type;	 /* 0: ClientHello */
	uint16_t legacy_version; /* 0: 0x0303 */
	bool tls12;		 /* TLS 1.2 style: no session id, supported_versions or key_share */
	const char *sni;	 /* NULL: no server_name extension */
	size_t sni_len;		 /* 0: strlen(sni); else that many bytes (a NUL is allowed) */
	uint8_t sni_type;	 /* the entry's name_type */
	const char *sni2;	 /* a second entry in the list */
	const char *alpn;	 /* comma-separated protocol names; NULL: no ALPN extension */
	struct raw sni_ext;	 /* the server_name extension's bytes as given */
	struct raw alpn_ext;	 /* the ALPN extension's bytes as given */
	bool no_extensions;	 /* the hello ends after compression_methods */
	bool bare;		 /* only ALPN, then server_name: the name is the last bytes */
	const uint16_t *extra;	 /* more extensions of these types (0 and 16 as above) */
	size_t n_extra;
	size_t padding; /* a padding extension (RFC 7685) of this many bytes */
};

struct hello {
	uint8_t buf[NETNS_TLS_HELLO_MAX + 4096];
	size_t len;
	/* Each length field the parser reads, with its size: the places a length can lie. */
	size_t lens[64], lens_size[64], n_lens;
	size_t open[8], open_size[8], depth;
};

static void put_uint(uint8_t *p, size_t size, size_t v)
{
	for (size_t i = size; i > 0; i--, v >>= 8)
		p[i - 1] = (uint8_t)v;
}

static size_t get_uint(const uint8_t *p, size_t size)
{
	size_t v = 0;

	for (size_t i = 0; i < size; i++)
		v = v << 8 | p[i];
	return v;
}

static void put(struct hello *h, const void *p, size_t n)
{
	assert_true(h->len + n <= sizeof(h->buf));
	memcpy(h->buf + h->len, p, n);
	h->len += n;
}

static void put8(struct hello *h, uint8_t v)
{
	put(h, &v, 1);
}

static void put16(struct hello *h, uint16_t v)
{
	uint8_t b[2];

	put_uint(b, 2, v);
	put(h, b, 2);
}

/* Opens a vector with a length field of size bytes, which end() fills in. */
static void begin(struct hello *h, size_t size)
{
	static const uint8_t zero[3];

	assert_true(h->depth < ELEMENTSOF(h->open) && h->n_lens < ELEMENTSOF(h->lens));
	h->open[h->depth] = h->lens[h->n_lens] = h->len;
	h->open_size[h->depth++] = h->lens_size[h->n_lens++] = size;
	put(h, zero, size);
}

static void end(struct hello *h)
{
	size_t off, size;

	assert_true(h->depth > 0);
	off = h->open[--h->depth];
	size = h->open_size[h->depth];
	put_uint(h->buf + off, size, h->len - off - size);
}

static void put_ext(struct hello *h, uint16_t type, const void *data, size_t len)
{
	put16(h, type);
	begin(h, 2);
	put(h, data, len);
	end(h);
}

static void put_sni_ext(struct hello *h, const struct opts *o)
{
	if (o->sni_ext.p) {
		put_ext(h, 0, o->sni_ext.p, o->sni_ext.len);
		return;
	}
	put16(h, 0);
	begin(h, 2);
	begin(h, 2);
	put8(h, o->sni_type);
	begin(h, 2);
	put(h, o->sni, o->sni_len ? o->sni_len : strlen(o->sni));
	end(h);
	if (o->sni2) {
		put8(h, 0);
		begin(h, 2);
		put(h, o->sni2, strlen(o->sni2));
		end(h);
	}
	end(h);
	end(h);
}

static void put_alpn_ext(struct hello *h, const struct opts *o)
{
	const char *p = o->alpn;

	if (o->alpn_ext.p) {
		put_ext(h, 16, o->alpn_ext.p, o->alpn_ext.len);
		return;
	}
	put16(h, 16);
	begin(h, 2);
	begin(h, 2);
	for (;;) {
		size_t n = strcspn(p, ",");

		begin(h, 1);
		put(h, p, n);
		end(h);
		if (!p[n])
			break;
		p += n + 1;
	}
	end(h);
	end(h);
}

/* Builds the hello o describes, in one record, as a TLS 1.3 client (or a TLS 1.2 one) sends it. */
static size_t build(struct hello *h, const struct opts *o)
{
	static const uint8_t groups[] = {0x00, 0x06, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18};
	static const uint8_t sigalgs[] = {0x00, 0x06, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01};
	static const uint8_t versions[] = {0x04, 0x03, 0x04, 0x03, 0x03};
	static const uint8_t point_formats[] = {0x01, 0x00};
	static const uint16_t suites13[] = {0x1301, 0x1302, 0x1303, 0xc02f};
	static const uint16_t suites12[] = {0xc02b, 0xc02f, 0x009c};
	uint8_t random[32], key_share[38] = {0x00, 0x24, 0x00, 0x1d, 0x00, 0x20};

	memset(random, 0xa5, sizeof(random));
	memset(key_share + 6, 0x42, sizeof(key_share) - 6);
	h->len = h->n_lens = h->depth = 0;
	put8(h, 22);
	put16(h, o->record_version ? o->record_version : 0x0301);
	begin(h, 2);
	put8(h, o->handshake_type ? o->handshake_type : 1);
	begin(h, 3);
	put16(h, o->legacy_version ? o->legacy_version : 0x0303);
	put(h, random, sizeof(random));
	begin(h, 1);
	if (!o->tls12)
		put(h, random, sizeof(random)); /* the middlebox compatibility mode's session id */
	end(h);
	begin(h, 2);
	for (size_t i = 0; i < (o->tls12 ? ELEMENTSOF(suites12) : ELEMENTSOF(suites13)); i++)
		put16(h, o->tls12 ? suites12[i] : suites13[i]);
	end(h);
	begin(h, 1);
	put8(h, 0);
	end(h);
	if (o->bare) {
		begin(h, 2);
		if (o->alpn)
			put_alpn_ext(h, o);
		if (o->sni)
			put_sni_ext(h, o);
		end(h);
	} else if (!o->no_extensions) {
		begin(h, 2);
		if (o->sni || o->sni_ext.p)
			put_sni_ext(h, o);
		put_ext(h, 10, groups, sizeof(groups));
		if (o->tls12)
			put_ext(h, 11, point_formats, sizeof(point_formats));
		if (o->alpn || o->alpn_ext.p)
			put_alpn_ext(h, o);
		put_ext(h, 13, sigalgs, sizeof(sigalgs));
		for (size_t i = 0; i < o->n_extra; i++)
			if (o->extra[i] == 0)
				put_sni_ext(h, o);
			else if (o->extra[i] == 16)
				put_alpn_ext(h, o);
			else
				put_ext(h, o->extra[i], point_formats, sizeof(point_formats));
		if (o->padding > 0) {
			put16(h, 21);
			begin(h, 2);
			for (size_t i = 0; i < o->padding; i++)
				put8(h, 0);
			end(h);
		}
		if (o->tls12) {
			put_ext(h, 23, "", 0);
		} else {
			put_ext(h, 43, versions, sizeof(versions));
			put_ext(h, 51, key_share, sizeof(key_share));
		}
		end(h);
	}
	end(h);
	end(h);
	assert_int_equal(h->depth, 0);
	return h->len;
}

/* Builds a hello whose handshake message is msg_len bytes long, with padding. */
static void build_sized(struct hello *h, size_t msg_len)
{
	struct opts o = {.sni = "example.com", .alpn = "h2", .padding = 1};

	build(h, &o);
	o.padding += msg_len - (h->len - 5);
	build(h, &o);
	assert_int_equal(h->len - 5, msg_len);
}

/* Splits the record at offset rec after at bytes of its payload. Returns the new record's offset.
 * The length fields the builder noted no longer apply. */
static size_t split_record(struct hello *h, size_t rec, size_t at)
{
	size_t len = get_uint(h->buf + rec + 3, 2), next = rec + 5 + at;

	assert_true(at > 0 && at < len);
	assert_true(h->len + 5 <= sizeof(h->buf));
	memmove(h->buf + next + 5, h->buf + next, h->len - next);
	h->len += 5;
	memcpy(h->buf + next, h->buf + rec, 3);
	put_uint(h->buf + rec + 3, 2, at);
	put_uint(h->buf + next + 3, 2, len - at);
	h->n_lens = 0;
	return next;
}

/* Parses an exact-size heap copy of p, so that the sanitizers see a read past len. */
static int parse(const uint8_t *p, size_t len, struct netns_tls_hello *ret)
{
	uint8_t *copy = malloc(len > 0 ? len : 1);
	int r;

	assert_non_null(copy);
	if (len > 0)
		memcpy(copy, p, len);
	r = netns_tls_parse_hello(copy, len, ret);
	free(copy);
	return r;
}

static int parse_built(const struct opts *o, struct netns_tls_hello *ret)
{
	static struct hello h;

	build(&h, o);
	return parse(h.buf, h.len, ret);
}

static int parse_sni(const char *sni, struct netns_tls_hello *ret)
{
	return parse_built(&(struct opts){.sni = sni, .alpn = "h2"}, ret);
}

/* Every prefix of p asks for more and leaves ret alone. */
static void assert_prefixes_ask_for_more(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		struct netns_tls_hello h = {.sni = "untouched", .alpn_h2 = true};
		int r = parse(p, i, &h);

		if (r != -EAGAIN)
			fail_msg("prefix of %zu of %zu bytes: %d", i, len, r);
		assert_string_equal(h.sni, "untouched");
		assert_true(h.alpn_h2);
	}
}

/* ---- Tests ---- */

static void test_tls13_hello_gives_sni_and_alpn(void **state)
{
	struct netns_tls_hello h;

	(void)state;
	assert_int_equal(
	    parse_built(&(struct opts){.sni = "api.github.com", .alpn = "h2,http/1.1"}, &h), 0);
	assert_string_equal(h.sni, "api.github.com");
	assert_true(h.alpn_h2);
	assert_true(h.alpn_http11);
}

static void test_tls12_hello_gives_sni_and_alpn(void **state)
{
	struct netns_tls_hello h;

	(void)state;
	assert_int_equal(
	    parse_built(&(struct opts){.tls12 = true, .sni = "example.org", .alpn = "http/1.1"},
			&h),
	    0);
	assert_string_equal(h.sni, "example.org");
	assert_false(h.alpn_h2);
	assert_true(h.alpn_http11);
}

static void test_real_hellos_from_openssl_curl_and_python_parse(void **state)
{
	const struct {
		const uint8_t *p;
		size_t len;
		const char *sni;
		bool h2;
	} real[] = {
	    {openssl_s_client_hello, sizeof(openssl_s_client_hello), "example.com", true},
	    {curl_hello, sizeof(curl_hello), "example.com", true},
	    {python_ssl_hello, sizeof(python_ssl_hello), "example.com", true},
	    {openssl_tls12_hello, sizeof(openssl_tls12_hello), "example.com", false},
	};

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(real); i++) {
		struct netns_tls_hello h;

		assert_int_equal(parse(real[i].p, real[i].len, &h), 0);
		assert_string_equal(h.sni, real[i].sni);
		assert_int_equal(h.alpn_h2, real[i].h2);
		assert_true(h.alpn_http11);
		assert_prefixes_ask_for_more(real[i].p, real[i].len);
	}
}

static void test_hello_without_server_name_gives_empty_sni(void **state)
{
	struct netns_tls_hello h = {.sni = "stale", .alpn_h2 = true};

	(void)state;
	assert_int_equal(parse_built(&(struct opts){.alpn = "http/1.1"}, &h), 0);
	assert_string_equal(h.sni, "");
	assert_false(h.alpn_h2);
	assert_true(h.alpn_http11);
}

static void test_hello_without_extensions_is_an_old_but_valid_hello(void **state)
{
	struct netns_tls_hello h = {.alpn_http11 = true};

	(void)state;
	assert_int_equal(parse_built(&(struct opts){.tls12 = true, .no_extensions = true}, &h), 0);
	assert_string_equal(h.sni, "");
	assert_false(h.alpn_h2);
	assert_false(h.alpn_http11);
}

static void test_sni_is_lower_cased(void **state)
{
	struct netns_tls_hello h;

	(void)state;
	assert_int_equal(parse_sni("API.GitHub.COM", &h), 0);
	assert_string_equal(h.sni, "api.github.com");
}

static void test_sni_trailing_dot_is_dropped(void **state)
{
	struct netns_tls_hello h;

	(void)state;
	assert_int_equal(parse_sni("example.com.", &h), 0);
	assert_string_equal(h.sni, "example.com");
	assert_int_equal(parse_sni("localhost.", &h), 0);
	assert_string_equal(h.sni, "localhost");
}

static void test_sni_empty_labels_are_refused(void **state)
{
	static const char *const bad[] = {
	    ".", "..", ".example.com", "example..com", "example.com..", "a.b.c..", ".a."};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (parse_sni(bad[i], &h) != -EBADMSG)
			fail_msg("\"%s\" was not refused", bad[i]);
}

static void test_sni_with_two_names_is_refused(void **state)
{
	struct netns_tls_hello h;

	(void)state;
	assert_int_equal(
	    parse_built(&(struct opts){.sni = "allowed.example.com", .sni2 = "evil.example.net"},
			&h),
	    -EBADMSG);
	assert_int_equal(parse_built(&(struct opts){.sni = "a.example", .sni2 = "a.example"}, &h),
			 -EBADMSG);
}

static void test_sni_other_name_type_is_refused(void **state)
{
	struct netns_tls_hello h;

	(void)state;
	assert_int_equal(parse_built(&(struct opts){.sni = "example.com", .sni_type = 1}, &h),
			 -EBADMSG);
}

static void test_sni_ip_literals_are_refused(void **state)
{
	static const char *const bad[] = {
	    "127.0.0.1",  "10.0.0.1.", "169.254.169.254", "2130706433",	     "127.1",
	    "0x7f.0.0.1", "1.2.3.0x4", "1.2.3.0X4",	  "example.0x",	     "example.123",
	    "::1",	  "[::1]",     "fe80::1%eth0",	  "::ffff:10.0.0.1",
	};
	static const char *const good[] = {
	    "1e100.net", "123.example.com", "0x7f.example", "example.0xg", "4chan.org", "a-1.b-2",
	};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (parse_sni(bad[i], &h) != -EBADMSG)
			fail_msg("\"%s\" was not refused", bad[i]);
	for (size_t i = 0; i < ELEMENTSOF(good); i++) {
		if (parse_sni(good[i], &h) != 0)
			fail_msg("\"%s\" was refused", good[i]);
		assert_string_equal(h.sni, good[i]);
	}
}

static void test_sni_invalid_characters_are_refused(void **state)
{
	static const char *const bad[] = {
	    "exa_mple.com",	  "exa mple.com",    "example.com:443", "user@example.com", "a/b",
	    "ex\xc3\xa4mple.com", "example.com\r\n", "*.example.com",	"example.com\x7f",
	};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (parse_sni(bad[i], &h) != -EBADMSG)
			fail_msg("\"%s\" was not refused", bad[i]);
	/* A NUL inside: "example.com\0.evil" must not turn into "example.com". */
	assert_int_equal(
	    parse_built(&(struct opts){.sni = "example.com\0.evil", .sni_len = 17}, &h), -EBADMSG);
}

static void test_sni_label_and_name_lengths_are_bounded(void **state)
{
	char name[300];
	struct netns_tls_hello h;

	(void)state;
	/* A label of 63 passes, of 64 does not. */
	memset(name, 'a', 63);
	strcpy(name + 63, ".com");
	assert_int_equal(parse_sni(name, &h), 0);
	assert_string_equal(h.sni, name);
	memset(name, 'a', 64);
	strcpy(name + 64, ".com");
	assert_int_equal(parse_sni(name, &h), -EBADMSG);
	strcpy(name, "www.");
	memset(name + 4, 'b', 64);
	name[68] = '\0';
	assert_int_equal(parse_sni(name, &h), -EBADMSG);

	/* 253 characters pass, with or without a trailing dot; 254 do not. */
	for (size_t i = 0; i < 253; i++)
		name[i] = i % 50 == 49 ? '.' : 'c';
	name[253] = '\0';
	assert_int_equal(parse_sni(name, &h), 0);
	assert_int_equal(strlen(h.sni), 253);
	assert_string_equal(h.sni, name);
	strcpy(name + 253, ".");
	assert_int_equal(parse_sni(name, &h), 0);
	assert_int_equal(strlen(h.sni), 253);
	strcpy(name + 253, "c");
	assert_int_equal(parse_sni(name, &h), -EBADMSG);
	strcpy(name + 253, "c.");
	assert_int_equal(parse_sni(name, &h), -EBADMSG);
	strcpy(name + 253, "cc");
	assert_int_equal(parse_sni(name, &h), -EBADMSG);
}

static void test_sni_extension_malformed_is_refused(void **state)
{
	static const struct raw bad[] = {
	    RAW(""),			 /* empty: what a server answers */
	    RAW("\x00\x00"),		 /* an empty list */
	    RAW("\x00\x03\x00\x00\x00"), /* an empty name */
	    RAW("\x00\x07\x00\x00\x03"
		"abc"), /* list longer than the extension */
	    RAW("\x00\x06\x00\x00\x03"
		"abc\x00"), /* extension longer than the list */
	    RAW("\x00\x06\x00\x00\x04"
		"abc"), /* name longer than the list */
	    RAW("\x00\x07\x00\x00\x03"
		"abc\x00"), /* a second entry cut short */
	};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (parse_built(&(struct opts){.sni_ext = bad[i]}, &h) != -EBADMSG)
			fail_msg("server_name extension %zu was not refused", i);
	assert_int_equal(parse_built(&(struct opts){.sni_ext = RAW("\x00\x06\x00\x00\x03"
								   "abc")},
				     &h),
			 0);
	assert_string_equal(h.sni, "abc");
}

static void test_alpn_flags_follow_the_offered_protocols(void **state)
{
	const struct {
		const char *alpn;
		bool h2, http11;
	} cases[] = {
	    {"h2,http/1.1", true, true},   {"http/1.1,h2", true, true},
	    {"h2", true, false},	   {"http/1.1", false, true},
	    {"h3,spdy/3.1", false, false}, {"h2c,http/1.0", false, false},
	    {"H2,HTTP/1.1", false, false}, {"http/1.10,h", false, false},
	};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		assert_int_equal(
		    parse_built(&(struct opts){.sni = "a.b", .alpn = cases[i].alpn}, &h), 0);
		if (h.alpn_h2 != cases[i].h2 || h.alpn_http11 != cases[i].http11)
			fail_msg("ALPN \"%s\": h2 %d, http/1.1 %d", cases[i].alpn, h.alpn_h2,
				 h.alpn_http11);
	}
}

static void test_alpn_malformed_is_refused(void **state)
{
	static const struct raw bad[] = {
	    RAW(""),				   /* no list */
	    RAW("\x00\x00"),			   /* an empty list */
	    RAW("\x00\x01\x00"),		   /* an empty name */
	    RAW("\x00\x04\x02h2\x00"),		   /* an empty name after h2 */
	    RAW("\x00\x03\x02h2\x00"),		   /* extension longer than the list */
	    RAW("\x00\x04\x02h2"),		   /* list longer than the extension */
	    RAW("\x00\x03\x03h2"),		   /* name longer than the list */
	    RAW("\x00\x04\x01h2"),		   /* name shorter: "2" is no length */
	    RAW("\x00\x0b\x02h2\x08http/1.1\x00"), /* a length byte left over */
	};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		if (parse_built(&(struct opts){.sni = "a.b", .alpn_ext = bad[i]}, &h) != -EBADMSG)
			fail_msg("ALPN extension %zu was not refused", i);
}

static int parse_with_extra(const uint16_t *extra, size_t n, struct netns_tls_hello *ret)
{
	return parse_built(
	    &(struct opts){.sni = "example.com", .alpn = "h2", .extra = extra, .n_extra = n}, ret);
}

static void test_duplicate_extensions_are_refused(void **state)
{
	static const uint16_t once_more[] = {0, 16, 10, 13};
	static const uint16_t twice[][2] = {{0xfe0d, 0xfe0d}, {0xffff, 0xffff}, {1, 1}, {64, 64}};
	static const uint16_t distinct[] = {1, 65, 0x4001, 0xffff, 0xfffe, 0x7fff, 64, 63};
	struct netns_tls_hello h;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(once_more); i++)
		if (parse_with_extra(&once_more[i], 1, &h) != -EBADMSG)
			fail_msg("a second extension %u was not refused", once_more[i]);
	for (size_t i = 0; i < ELEMENTSOF(twice); i++)
		if (parse_with_extra(twice[i], 2, &h) != -EBADMSG)
			fail_msg("extension %u twice was not refused", twice[i][0]);
	/* Types that share a bit position or a bitmap word are not the same type. */
	assert_int_equal(parse_with_extra(distinct, ELEMENTSOF(distinct), &h), 0);
	assert_string_equal(h.sni, "example.com");
}

static void test_every_truncation_of_a_valid_hello_asks_for_more(void **state)
{
	static const struct opts hellos[] = {
	    {.sni = "example.com", .alpn = "h2,http/1.1"},
	    {.tls12 = true, .sni = "example.com."},
	    {.tls12 = true, .no_extensions = true},
	    {.alpn = "http/1.1"},
	    {.bare = true, .sni = "last.example.com", .alpn = "h2"},
	    {.bare = true, .sni = "last.example.com."},
	    {.bare = true, .alpn = "h2,http/1.1"},
	};
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(hellos); i++) {
		build(&h, &hellos[i]);
		assert_int_equal(parse(h.buf, h.len, &ret), 0);
		assert_prefixes_ask_for_more(h.buf, h.len);
	}
}

static void test_hello_split_over_two_records_parses_at_every_split(void **state)
{
	static const struct opts o = {.sni = "Split.Example.com", .alpn = "h2"};
	static struct hello h;
	struct netns_tls_hello ret;
	size_t msg_len;

	(void)state;
	build(&h, &o);
	msg_len = h.len - 5;
	for (size_t at = 1; at < msg_len; at++) {
		build(&h, &o);
		split_record(&h, 0, at);
		memset(&ret, 0, sizeof(ret));
		if (parse(h.buf, h.len, &ret) != 0)
			fail_msg("split after %zu bytes", at);
		assert_string_equal(ret.sni, "split.example.com");
		assert_true(ret.alpn_h2);
	}
	/* Cut short anywhere, split in the handshake header or in the server name, it waits. */
	build(&h, &o);
	split_record(&h, 0, 2);
	assert_prefixes_ask_for_more(h.buf, h.len);
	build(&h, &o);
	split_record(&h, 0, 120);
	assert_prefixes_ask_for_more(h.buf, h.len);
}

static void test_hello_in_many_small_records_parses(void **state)
{
	static struct hello h;
	struct netns_tls_hello ret;
	size_t rec = 0;

	(void)state;
	build(&h, &(struct opts){.sni = "example.com", .alpn = "http/1.1"});
	/* A record for each of the first 150 bytes, which covers the server name. */
	for (size_t i = 0; i < 150; i++)
		rec = split_record(&h, rec, 1);
	assert_int_equal(parse(h.buf, h.len, &ret), 0);
	assert_string_equal(ret.sni, "example.com");
	assert_true(ret.alpn_http11);
	assert_prefixes_ask_for_more(h.buf, h.len);
}

static void test_bytes_after_the_hello_records_are_ignored(void **state)
{
	/* A TLS 1.3 client may follow up with change_cipher_spec and early data. */
	static const uint8_t more[] = {0x14, 0x03, 0x03, 0x00, 0x01, 0x01, 0x17,
				       0x03, 0x03, 0x00, 0x02, 0xde, 0xad};
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	build(&h, &(struct opts){.sni = "example.com"});
	put(&h, more, sizeof(more));
	assert_int_equal(parse(h.buf, h.len, &ret), 0);
	assert_string_equal(ret.sni, "example.com");
}

static void test_record_carrying_more_than_the_hello_is_refused(void **state)
{
	static const uint8_t certificate[] = {0x0b, 0x00, 0x00, 0x00};
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	build(&h, &(struct opts){.sni = "example.com"});
	put(&h, certificate, sizeof(certificate));
	put_uint(h.buf + 3, 2, h.len - 5);
	assert_int_equal(parse(h.buf, h.len, &ret), -EBADMSG);
}

static void test_other_content_types_are_refused_at_the_first_byte(void **state)
{
	static const char *const bad[] = {
	    "\x17\x03\x03\x00\x10",	    /* application_data */
	    "\x15\x03\x03\x00\x02\x02\x28", /* an alert */
	    "\x14\x03\x03\x00\x01\x01",	    /* change_cipher_spec */
	    "\x80\x2e\x01\x03\x01",	    /* an SSL 2.0 compatible hello */
	    "GET / HTTP/1.1\r\n",	    /* plain text to a TLS port */
	    "SSH-2.0-OpenSSH_9.2\r\n",
	};
	struct netns_tls_hello ret;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(parse((const uint8_t *)bad[i], 1, &ret), -EBADMSG);
		assert_int_equal(parse((const uint8_t *)bad[i], strlen(bad[i]), &ret), -EBADMSG);
	}
}

static void test_record_of_other_type_inside_the_hello_is_refused(void **state)
{
	static struct hello h;
	struct netns_tls_hello ret;
	size_t next;

	(void)state;
	build(&h, &(struct opts){.sni = "example.com"});
	next = split_record(&h, 0, 50);
	h.buf[next] = 0x15;
	assert_int_equal(parse(h.buf, next + 1, &ret), -EBADMSG);
	assert_int_equal(parse(h.buf, h.len, &ret), -EBADMSG);
}

static void test_record_versions_tls10_to_tls13_are_accepted(void **state)
{
	static const uint16_t good[] = {0x0301, 0x0302, 0x0303, 0x0304};
	static const uint16_t bad[] = {0x0300, 0x0305, 0x0203, 0x0401, 0x0100, 0xffff};
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_int_equal(
		    parse_built(&(struct opts){.record_version = good[i], .sni = "a.b"}, &ret), 0);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		build(&h, &(struct opts){.record_version = bad[i], .sni = "a.b"});
		/* Refused as soon as the version has arrived. */
		assert_int_equal(parse(h.buf, 3, &ret), -EBADMSG);
		assert_int_equal(parse(h.buf, h.len, &ret), -EBADMSG);
	}
}

static void test_legacy_version_below_tls10_is_refused(void **state)
{
	static const uint16_t good[] = {0x0301, 0x0302, 0x0303, 0x0304, 0x03ff};
	static const uint16_t bad[] = {0x0300, 0x0200, 0x0002, 0x0403, 0xfeff};
	struct netns_tls_hello ret;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		assert_int_equal(
		    parse_built(&(struct opts){.legacy_version = good[i], .sni = "a.b"}, &ret), 0);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		assert_int_equal(
		    parse_built(&(struct opts){.legacy_version = bad[i], .sni = "a.b"}, &ret),
		    -EBADMSG);
}

static void test_handshake_other_than_client_hello_is_refused(void **state)
{
	static const uint8_t types[] = {2, 4, 11, 16, 20, 0xff};
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		build(&h, &(struct opts){.handshake_type = types[i], .sni = "a.b"});
		assert_int_equal(parse(h.buf, 6, &ret), -EBADMSG);
		assert_int_equal(parse(h.buf, h.len, &ret), -EBADMSG);
	}
}

static void test_lengths_that_lie_are_refused(void **state)
{
	static const struct opts hellos[] = {
	    {.sni = "example.com", .alpn = "h2,http/1.1"},
	    {.tls12 = true, .sni = "www.example.org", .alpn = "http/1.1"},
	    {.tls12 = true, .no_extensions = true},
	};
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(hellos); i++) {
		build(&h, &hellos[i]);
		assert_true(h.n_lens >= 5);
		for (size_t l = 0; l < h.n_lens; l++)
			for (int d = -1; d <= 1; d += 2) {
				size_t off = h.lens[l], size = h.lens_size[l];
				size_t v = get_uint(h.buf + off, size);
				int r;

				put_uint(h.buf + off, size, v + (size_t)d);
				r = parse(h.buf, h.len, &ret);
				put_uint(h.buf + off, size, v);
				if (r != -EBADMSG)
					fail_msg("hello %zu: length at %zu (%zu bytes) %+d: %d", i,
						 off, size, d, r);
			}
		assert_int_equal(parse(h.buf, h.len, &ret), 0);
	}
}

static void test_record_lengths_that_lie_in_a_split_hello_are_refused(void **state)
{
	static struct hello h;
	struct netns_tls_hello ret;
	size_t next, first, second;

	(void)state;
	build(&h, &(struct opts){.sni = "example.com", .alpn = "h2"});
	next = split_record(&h, 0, 100);
	first = get_uint(h.buf + 3, 2);
	second = get_uint(h.buf + next + 3, 2);
	for (int d = -1; d <= 1; d += 2) {
		put_uint(h.buf + 3, 2, first + (size_t)d);
		assert_int_equal(parse(h.buf, h.len, &ret), -EBADMSG);
		put_uint(h.buf + 3, 2, first);
		put_uint(h.buf + next + 3, 2, second + (size_t)d);
		assert_int_equal(parse(h.buf, h.len, &ret), -EBADMSG);
		put_uint(h.buf + next + 3, 2, second);
	}
	assert_int_equal(parse(h.buf, h.len, &ret), 0);
}

static void test_hello_fields_out_of_bounds_are_refused(void **state)
{
	static struct hello h;
	struct netns_tls_hello ret;
	size_t sid = 5 + 4 + 2 + 32, cs;

	(void)state;
	/* A session id of 33 bytes. */
	build(&h, &(struct opts){.sni = "a.b"});
	h.buf[sid] = 33;
	assert_int_equal(parse(h.buf, sid + 1, &ret), -EBADMSG);
	/* An odd or empty cipher suite list, and no compression method. */
	build(&h, &(struct opts){.tls12 = true, .sni = "a.b"});
	cs = sid + 1;
	put_uint(h.buf + cs, 2, 5);
	assert_int_equal(parse(h.buf, cs + 2, &ret), -EBADMSG);
	put_uint(h.buf + cs, 2, 0);
	assert_int_equal(parse(h.buf, cs + 2, &ret), -EBADMSG);
	build(&h, &(struct opts){.tls12 = true, .sni = "a.b"});
	cs += 2 + get_uint(h.buf + cs, 2);
	h.buf[cs] = 0;
	assert_int_equal(parse(h.buf, cs + 1, &ret), -EBADMSG);
}

static void test_records_longer_than_2_14_or_empty_are_refused(void **state)
{
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	build_sized(&h, 16 * 1024 + 1);
	assert_int_equal(parse(h.buf, 5, &ret), -EBADMSG);
	/* From 0x4100 on, the high byte alone says so. */
	assert_int_equal(parse((const uint8_t[]){0x16, 0x03, 0x01, 0x41}, 4, &ret), -EBADMSG);
	build(&h, &(struct opts){.sni = "a.b"});
	put_uint(h.buf + 3, 2, 0);
	assert_int_equal(parse(h.buf, 5, &ret), -EBADMSG);
}

static void test_hello_filling_the_largest_record_parses(void **state)
{
	static struct hello h;
	struct netns_tls_hello ret;

	(void)state;
	build_sized(&h, 16 * 1024);
	assert_int_equal(h.len, NETNS_TLS_HELLO_MAX);
	assert_int_equal(parse(h.buf, h.len, &ret), 0);
	assert_string_equal(ret.sni, "example.com");
	assert_int_equal(parse(h.buf, h.len - 1, &ret), -EAGAIN);
	/* In two records it needs 5 bytes more than the proxy reads: refused at once. */
	split_record(&h, 0, 100);
	assert_int_equal(parse(h.buf, 9, &ret), -EBADMSG);
	build_sized(&h, 16 * 1024 - 5);
	split_record(&h, 0, 100);
	assert_int_equal(h.len, NETNS_TLS_HELLO_MAX);
	assert_int_equal(parse(h.buf, h.len, &ret), 0);
	build_sized(&h, 16 * 1024 - 4);
	split_record(&h, 0, 100);
	assert_int_equal(parse(h.buf, 9, &ret), -EBADMSG);
}

static void test_hello_too_big_for_the_proxy_is_refused_at_its_header(void **state)
{
	/* A record of 2^14 bytes whose handshake message claims 64 KiB. */
	static const uint8_t big[] = {0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x01, 0x00, 0x00};
	/* Many tiny records: the handshake header never completes within the limit. */
	static uint8_t tiny[NETNS_TLS_HELLO_MAX + 6];
	struct netns_tls_hello ret;

	(void)state;
	assert_int_equal(parse(big, sizeof(big), &ret), -EBADMSG);
	assert_int_equal(parse(big, 5, &ret), -EAGAIN);
	for (size_t i = 0; i + 6 <= sizeof(tiny); i += 6)
		memcpy(tiny + i, (const uint8_t[]){0x16, 0x03, 0x01, 0x00, 0x01, 0x01}, 6);
	assert_int_equal(parse(tiny, 6, &ret), -EAGAIN);
	assert_int_equal(parse(tiny, 18, &ret), -EAGAIN);
	assert_int_equal(parse(tiny, 24, &ret), -EBADMSG); /* 0x01010101: too long */
	assert_int_equal(parse(tiny, NETNS_TLS_HELLO_MAX, &ret), -EBADMSG);
}

static void test_failed_parse_leaves_the_result_alone(void **state)
{
	struct netns_tls_hello ret = {.sni = "untouched", .alpn_http11 = true};

	(void)state;
	assert_int_equal(parse_built(&(struct opts){.sni = "10.0.0.1", .alpn = "h2"}, &ret),
			 -EBADMSG);
	assert_string_equal(ret.sni, "untouched");
	assert_false(ret.alpn_h2);
	assert_true(ret.alpn_http11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tls13_hello_gives_sni_and_alpn),
	    cmocka_unit_test(test_tls12_hello_gives_sni_and_alpn),
	    cmocka_unit_test(test_real_hellos_from_openssl_curl_and_python_parse),
	    cmocka_unit_test(test_hello_without_server_name_gives_empty_sni),
	    cmocka_unit_test(test_hello_without_extensions_is_an_old_but_valid_hello),
	    cmocka_unit_test(test_sni_is_lower_cased),
	    cmocka_unit_test(test_sni_trailing_dot_is_dropped),
	    cmocka_unit_test(test_sni_empty_labels_are_refused),
	    cmocka_unit_test(test_sni_with_two_names_is_refused),
	    cmocka_unit_test(test_sni_other_name_type_is_refused),
	    cmocka_unit_test(test_sni_ip_literals_are_refused),
	    cmocka_unit_test(test_sni_invalid_characters_are_refused),
	    cmocka_unit_test(test_sni_label_and_name_lengths_are_bounded),
	    cmocka_unit_test(test_sni_extension_malformed_is_refused),
	    cmocka_unit_test(test_alpn_flags_follow_the_offered_protocols),
	    cmocka_unit_test(test_alpn_malformed_is_refused),
	    cmocka_unit_test(test_duplicate_extensions_are_refused),
	    cmocka_unit_test(test_every_truncation_of_a_valid_hello_asks_for_more),
	    cmocka_unit_test(test_hello_split_over_two_records_parses_at_every_split),
	    cmocka_unit_test(test_hello_in_many_small_records_parses),
	    cmocka_unit_test(test_bytes_after_the_hello_records_are_ignored),
	    cmocka_unit_test(test_record_carrying_more_than_the_hello_is_refused),
	    cmocka_unit_test(test_other_content_types_are_refused_at_the_first_byte),
	    cmocka_unit_test(test_record_of_other_type_inside_the_hello_is_refused),
	    cmocka_unit_test(test_record_versions_tls10_to_tls13_are_accepted),
	    cmocka_unit_test(test_legacy_version_below_tls10_is_refused),
	    cmocka_unit_test(test_handshake_other_than_client_hello_is_refused),
	    cmocka_unit_test(test_lengths_that_lie_are_refused),
	    cmocka_unit_test(test_record_lengths_that_lie_in_a_split_hello_are_refused),
	    cmocka_unit_test(test_hello_fields_out_of_bounds_are_refused),
	    cmocka_unit_test(test_records_longer_than_2_14_or_empty_are_refused),
	    cmocka_unit_test(test_hello_filling_the_largest_record_parses),
	    cmocka_unit_test(test_hello_too_big_for_the_proxy_is_refused_at_its_header),
	    cmocka_unit_test(test_failed_parse_leaves_the_result_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
