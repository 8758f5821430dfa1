/*
 * A stand-in for Windows' bcryptprimitives.dll, for running Rust programs
 * under Wine 8 (Debian 12), whose bcryptprimitives.dll lacks ProcessPrng.
 * Rust's standard library (1.78+) imports ProcessPrng from it to seed
 * HashMap keys. We fill the buffer with RtlGenRandom (advapi32's
 * SystemFunction036), which Wine implements.
 *
 * Used only by `cargo xtask test-windows`, which builds it with
 *   x86_64-w64-mingw32-gcc -shared -o bcryptprimitives.dll \
 *       bcryptprimitives.c bcryptprimitives.def -ladvapi32
 * and puts the DLL next to the .exe (the application directory comes first
 * in the DLL search order).
 */
#include <windows.h>

/* advapi32!SystemFunction036, a.k.a. RtlGenRandom. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    /* RtlGenRandom takes a ULONG length: feed large requests in pieces. */
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    /* Like Windows' ProcessPrng: always TRUE once the buffer is filled. */
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
