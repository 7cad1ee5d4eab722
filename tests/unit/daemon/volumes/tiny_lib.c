/* A tiny shared object for the volume tests; built with different sonames and ELF classes.
 * TAG (the output name) makes each build's bytes differ, so copies can be told apart. */
#define VGPU_STR2(x) #x
#define VGPU_STR(x) VGPU_STR2(x)
const char vgpu_tiny_lib_tag[] = VGPU_STR(TAG);
int vgpu_tiny_lib_symbol(void) { return 42; }
