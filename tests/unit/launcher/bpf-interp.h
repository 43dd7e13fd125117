#pragma once

/* A small classic-BPF interpreter for the tests: it runs the exported seccomp program against a
 * synthetic struct seccomp_data, so the tests check the program the kernel would run, not the
 * tables it was made from. It follows the kernel's rules for seccomp programs (32-bit loads from
 * seccomp_data only, forward jumps, 16 scratch words) and fails the test on anything else. */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static inline uint32_t bpf_run(const struct sock_filter *insns, size_t n,
			       const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	const unsigned char *data = (const unsigned char *)d;

	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *f = &insns[pc];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? x : f->k;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v;

			switch (BPF_MODE(f->code)) {
			case BPF_ABS:
				assert_int_equal(BPF_SIZE(f->code), BPF_W);
				assert_true(f->k % 4 == 0 && f->k + 4 <= sizeof(*d));
				memcpy(&v, data + f->k, 4);
				break;
			case BPF_IMM:
				v = f->k;
				break;
			case BPF_MEM:
				assert_true(f->k < BPF_MEMWORDS);
				v = mem[f->k];
				break;
			case BPF_LEN:
				v = sizeof(*d);
				break;
			default:
				fail_msg("unsupported load mode at %zu", pc);
				return 0;
			}
			if (BPF_CLASS(f->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
			assert_true(f->k < BPF_MEMWORDS);
			mem[f->k] = a;
			break;
		case BPF_STX:
			assert_true(f->k < BPF_MEMWORDS);
			mem[f->k] = x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD:
				a += src;
				break;
			case BPF_SUB:
				a -= src;
				break;
			case BPF_MUL:
				a *= src;
				break;
			case BPF_DIV:
				assert_true(src != 0);
				a /= src;
				break;
			case BPF_MOD:
				assert_true(src != 0);
				a %= src;
				break;
			case BPF_AND:
				a &= src;
				break;
			case BPF_OR:
				a |= src;
				break;
			case BPF_XOR:
				a ^= src;
				break;
			case BPF_LSH:
				a = src < 32 ? a << src : 0;
				break;
			case BPF_RSH:
				a = src < 32 ? a >> src : 0;
				break;
			case BPF_NEG:
				a = -a;
				break;
			default:
				fail_msg("unsupported alu op at %zu", pc);
			}
			break;
		case BPF_JMP: {
			bool cond;

			if (BPF_OP(f->code) == BPF_JA) {
				assert_true(pc + 1 + f->k < n);
				pc += f->k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ:
				cond = a == src;
				break;
			case BPF_JGT:
				cond = a > src;
				break;
			case BPF_JGE:
				cond = a >= src;
				break;
			case BPF_JSET:
				cond = (a & src) != 0;
				break;
			default:
				fail_msg("unsupported jump at %zu", pc);
				return 0;
			}
			pc += cond ? f->jt : f->jf;
			assert_true(pc + 1 < n);
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : f->k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			fail_msg("unsupported instruction class at %zu", pc);
		}
	}
	fail_msg("program ran off its end");
	return 0;
}
