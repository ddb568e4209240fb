/* An LD_PRELOAD shim that answers MKL's CPU check for it, so that either of its code paths can
   be computed on any x86-64 machine. torch's x86 wheels carry MKL inside libtorch_cpu.so; under
   MKL_CBWR=COMPATIBLE MKL still asks whether it runs on an AMD Zen core (mkl_serv_cpuiszen) and
   takes a path of its own there for float32 products 8 or more wide. What it answers is not the
   vendor alone (an AMD EPYC family 26 takes the Intel path), and nobody can say what the next
   release will ask: the tests compute both paths, and the engine tells them apart by their bits.

   Build: cc -shared -fPIC -O2 -DMKL_AS_ZEN=1 -o mkl-as-zen.so mkl_path.c     (the Zen path)
          cc -shared -fPIC -O2 -DMKL_AS_ZEN=0 -o mkl-as-intel.so mkl_path.c   (the Intel path)
   A shim emulates a path; it is not a machine of that kind. */
int mkl_serv_cpuiszen(void) { return MKL_AS_ZEN; }
#if !MKL_AS_ZEN
int mkl_serv_intel_cpu(void) { return 1; }
int mkl_serv_intel_cpu_true(void) { return 1; }
#endif
