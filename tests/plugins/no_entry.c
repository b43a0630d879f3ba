/* A shared library that is not an xreduce plugin. */
__attribute__((visibility("default"))) int not_a_plugin(void) { return 42; }
