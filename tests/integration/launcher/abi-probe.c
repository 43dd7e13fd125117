/* A tiny probe for the non-native ABIs: makes getpid() the way argv[1] says and exits 0 when the
 * call came back (whatever it returned). Under airlock's filter, "x32" and "i386" must instead
 * die of SIGSYS. Built without sanitizers: it runs under the filter. */

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long r;

	if (argc != 2)
		return 2;
	if (strcmp(argv[1], "native") == 0)
		return syscall(SYS_getpid) > 0 ? 0 : 1;
#if defined(__x86_64__)
	if (strcmp(argv[1], "x32") == 0) {
		/* the x32 ABI: x86_64's entry, with bit 30 set in the syscall number */
		r = syscall(0x40000000 | SYS_getpid);
		(void)r;
		return 0;
	}
	if (strcmp(argv[1], "i386") == 0) {
		/* the i386 ABI from a 64-bit process: int 0x80, where getpid is 20 */
		__asm__ volatile("int $0x80"
				 : "=a"(r)
				 : "a"(20L)
				 : "rcx", "r8", "r9", "r10", "r11", "memory");
		(void)r;
		return 0;
	}
#endif
	return 3;
}
