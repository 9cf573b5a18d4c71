// Run AB (session 8): the prototype behind h200-s8-runAB-lanefold-timing{1,2}.csv. Not library code and not
// built by CMake: one lane per padded fold (folds of <= 8Q entries in Q aligned windows of 8, so a lane needs no
// fold bounds before its first load) against copies of csr_vector and csr_scalar, timed three ways in one process.
// Build: nvcc -O3 -arch=sm_90 -std=c++17; input: binary CSR files (m, n, nnz, row_ptr, col, val as double).
// timing1.csv came from an earlier version of this file that also tried fold caps of 1 and blocks of 128 and 64
// threads, without the interleaved-event column; timing2.csv from this one.
// Experiment: one lane per padded fold (folds of <= 8Q entries in Q aligned windows, no fold_ptr load)
// against csr_vector and csr_scalar, same process, H200. Not library code.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <cuda_runtime.h>
#define CK(x) do{cudaError_t e=(x); if(e){printf("CUDA %s line %d\n",cudaGetErrorString(e),__LINE__); exit(1);}}while(0)
static const uint32_t PAD = 0xFFFFFFFFu;

template <typename T> __device__ __forceinline__ T lds(const T* p){ return __ldcs(p); }

template <typename T, int Q, int ACC>
__global__ void __launch_bounds__(256) lane_kernel(int units, const int* __restrict__ fold_row, const uint32_t* __restrict__ cols,
   const T* __restrict__ vals, const T* __restrict__ x, T* __restrict__ y, T alpha)
{
  const int u = blockIdx.x * blockDim.x + threadIdx.x;
  if (u >= units) return;
  const int r0 = __ldg(fold_row + u), r1 = __ldg(fold_row + u + 1);
  T a[ACC];
#pragma unroll
  for (int i = 0; i < ACC; i++) a[i] = T(0);
#pragma unroll
  for (int q = 0; q < Q; q++) {
    const size_t k0 = ((size_t)u * Q + q) * 8;
    uint32_t c[8]; T v[8], xv[8];
    const uint4* cp = reinterpret_cast<const uint4*>(cols + k0);
    uint4 c0 = __ldcs(cp), c1 = __ldcs(cp + 1);
    c[0]=c0.x;c[1]=c0.y;c[2]=c0.z;c[3]=c0.w;c[4]=c1.x;c[5]=c1.y;c[6]=c1.z;c[7]=c1.w;
    if (sizeof(T) == 8) {
      const double2* vp = reinterpret_cast<const double2*>(vals + k0);
#pragma unroll
      for (int i = 0; i < 4; i++) { double2 t = __ldcs(vp + i); v[2*i] = (T)t.x; v[2*i+1] = (T)t.y; }
    } else {
      const float4* vp = reinterpret_cast<const float4*>(vals + k0);
#pragma unroll
      for (int i = 0; i < 2; i++) { float4 t = __ldcs(vp + i); v[4*i]=(T)t.x; v[4*i+1]=(T)t.y; v[4*i+2]=(T)t.z; v[4*i+3]=(T)t.w; }
    }
#pragma unroll
    for (int j = 0; j < 8; j++) xv[j] = c[j] != PAD ? __ldg(x + (c[j] >> 2)) : T(0);
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const T p = c[j] != PAD ? v[j] * xv[j] : T(0);
      const int r = (int)(c[j] & 3u);
#pragma unroll
      for (int i = 0; i < ACC; i++) if (r == i) a[i] += p;
    }
  }
#pragma unroll
  for (int i = 0; i < ACC; i++) if (r0 + i < r1) y[r0 + i] = alpha * a[i];
}

template <typename T>
__global__ void __launch_bounds__(256) csr_vector_kernel(int m, int lg, const int* __restrict__ ptr, const int* __restrict__ col,
   const T* __restrict__ val, const T* __restrict__ x, T* __restrict__ y, T alpha)
{
  const int lanes = 1 << lg;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long r = t >> lg; const int l = (int)(t & (lanes - 1));
  T sum = 0;
  if (r < m) { const int end = ptr[r + 1]; for (int k = ptr[r] + l; k < end; k += lanes) sum += __ldcs(val + k) * __ldg(x + __ldcs(col + k)); }
  for (int off = lanes >> 1; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (l == 0 && r < m) y[r] = alpha * sum;
}
template <typename T>
__global__ void __launch_bounds__(256) csr_scalar_kernel(int m, const int* __restrict__ ptr, const int* __restrict__ col,
   const T* __restrict__ val, const T* __restrict__ x, T* __restrict__ y, T alpha)
{
  const int r = blockIdx.x * blockDim.x + threadIdx.x; if (r >= m) return;
  T s = 0; for (int k = ptr[r], e = ptr[r+1]; k < e; k++) s += val[k] * __ldg(x + col[k]);
  y[r] = alpha * s;
}

struct Mat { int m, n, nnz; std::vector<int> rp, ci; std::vector<double> v; };
static Mat readbin(const char* f){ Mat A; FILE* fp=fopen(f,"rb"); int h[3]; fread(h,4,3,fp); A.m=h[0];A.n=h[1];A.nnz=h[2];
  A.rp.resize(A.m+1); A.ci.resize(A.nnz); A.v.resize(A.nnz); fread(A.rp.data(),4,A.m+1,fp); fread(A.ci.data(),4,A.nnz,fp); fread(A.v.data(),8,A.nnz,fp); fclose(fp); return A; }

template <typename T> struct Timer {
  cudaEvent_t a, b; Timer(){ cudaEventCreate(&a); cudaEventCreate(&b);} 
  template <typename F> double batch(F f, int n){ cudaEventRecord(a); for(int i=0;i<n;i++) f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms,a,b); return ms*1000.0/n; }
  template <typename F> std::vector<double> interleaved(F f, int n){ std::vector<cudaEvent_t> ev(n+1); for(auto&e:ev) cudaEventCreate(&e);
     cudaEventRecord(ev[0]); for(int i=0;i<n;i++){ f(); cudaEventRecord(ev[i+1]); } cudaEventSynchronize(ev[n]);
     std::vector<double> r; for(int i=0;i<n;i++){ float ms; cudaEventElapsedTime(&ms,ev[i],ev[i+1]); r.push_back(ms*1000.0);} for(auto&e:ev) cudaEventDestroy(e); return r; }
  template <typename F> double single(F f){ cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms,a,b); return ms*1000.0; }
};
static double med(std::vector<double> s){ std::sort(s.begin(), s.end()); return s[s.size()/2]; }

template <typename T>
void run(const char* name, const Mat& A){
  std::vector<T> hx(A.n); for (int i=0;i<A.n;i++) hx[i] = (T)(0.5 + (double)((i*2654435761u)%1000)/1000.0);
  std::vector<double> ref(A.m); for (int r=0;r<A.m;r++){ double s=0; for(int k=A.rp[r];k<A.rp[r+1];k++) s += A.v[k]*(double)hx[A.ci[k]]; ref[r]=s; }
  int maxrow=0; for(int r=0;r<A.m;r++) maxrow=std::max(maxrow,A.rp[r+1]-A.rp[r]);
  T *dx,*dy,*dval; int *drp,*dci;
  CK(cudaMalloc(&dx,A.n*sizeof(T))); CK(cudaMalloc(&dy,A.m*sizeof(T))); CK(cudaMalloc(&dval,A.nnz*sizeof(T)));
  CK(cudaMalloc(&drp,(A.m+1)*4)); CK(cudaMalloc(&dci,A.nnz*4));
  std::vector<T> hv(A.v.begin(), A.v.end());
  CK(cudaMemcpy(dx,hx.data(),A.n*sizeof(T),cudaMemcpyHostToDevice)); CK(cudaMemcpy(dval,hv.data(),A.nnz*sizeof(T),cudaMemcpyHostToDevice));
  CK(cudaMemcpy(drp,A.rp.data(),(A.m+1)*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dci,A.ci.data(),A.nnz*4,cudaMemcpyHostToDevice));
  double avg=(double)A.nnz/A.m; int lanes = avg<4?2:avg<8?4:avg<16?8:16; int lg=0; while((1<<lg)<lanes) lg++;
  Timer<T> tm; const T alpha = 1;
  auto check=[&](const char* what){ std::vector<T> hy(A.m); cudaMemcpy(hy.data(),dy,A.m*sizeof(T),cudaMemcpyDeviceToHost);
     double worst=0; for(int r=0;r<A.m;r++){ double bound=0; for(int k=A.rp[r];k<A.rp[r+1];k++) bound+=fabs(A.v[k]*(double)hx[A.ci[k]]); double e=fabs(hy[r]-ref[r])/( (bound>0?bound:1)* (sizeof(T)==8?1e-15:1e-6)*(A.rp[r+1]-A.rp[r]+2)); worst=std::max(worst,e);} 
     if (worst > 1) printf("  WRONG %s worst %.3g\n", what, worst); };
  struct V { const char* nm; std::function<void()> f; };
  std::vector<std::pair<std::string,std::function<void()>>> vs;
  unsigned gv = (unsigned)(((long long)A.m*lanes + 255)/256);
  vs.push_back({"csr_vector", [=]{ csr_vector_kernel<T><<<gv,256>>>(A.m,lg,drp,dci,dval,dx,dy,alpha); }});
  vs.push_back({"csr_scalar", [=]{ csr_scalar_kernel<T><<<(A.m+255)/256,256>>>(A.m,drp,dci,dval,dx,dy,alpha); }});
  std::vector<void*> frees;
  for (int Q = 1; Q <= 2; Q++) {
    if (maxrow > 8*Q) continue;
    for (int cap : {4, 2}) {
      // greedy folds
      std::vector<int> frow; int r = 0;
      while (r < A.m) { frow.push_back(r); int nz = A.rp[r+1]-A.rp[r]; int s = r++;
        while (r < A.m && r - s < cap && nz + (A.rp[r+1]-A.rp[r]) <= 8*Q) { nz += A.rp[r+1]-A.rp[r]; r++; } }
      int units = (int)frow.size(); frow.push_back(A.m);
      std::vector<uint32_t> hc((size_t)units*8*Q, PAD); std::vector<T> hvv((size_t)units*8*Q, T(0));
      for (int u = 0; u < units; u++) { std::vector<std::pair<std::pair<int,int>,int>> e;
        for (int rr = frow[u]; rr < frow[u+1]; rr++) for (int k=A.rp[rr];k<A.rp[rr+1];k++) e.push_back({{A.ci[k], rr-frow[u]}, k});
        std::sort(e.begin(), e.end());
        for (size_t j=0;j<e.size();j++){ hc[(size_t)u*8*Q+j] = ((uint32_t)e[j].first.first<<2)|(uint32_t)e[j].first.second; hvv[(size_t)u*8*Q+j]=(T)A.v[e[j].second]; } }
      int *dfr; uint32_t* dc; T* dv2;
      CK(cudaMalloc(&dfr,(units+1)*4)); CK(cudaMalloc(&dc,hc.size()*4)); CK(cudaMalloc(&dv2,hvv.size()*sizeof(T)));
      frees.push_back(dfr); frees.push_back(dc); frees.push_back(dv2);
      CK(cudaMemcpy(dfr,frow.data(),(units+1)*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dc,hc.data(),hc.size()*4,cudaMemcpyHostToDevice)); CK(cudaMemcpy(dv2,hvv.data(),hvv.size()*sizeof(T),cudaMemcpyHostToDevice));
      for (int bs : {256}) {
        char nm[64]; snprintf(nm, sizeof nm, "lane Q%d cap%d bs%d", Q, cap, bs);
        unsigned g = (units + bs - 1) / bs;
        std::function<void()> f;
        if (Q == 1 && cap == 4) f = [=]{ lane_kernel<T,1,4><<<g,bs>>>(units,dfr,dc,dv2,dx,dy,alpha); };
        if (Q == 1 && cap == 2) f = [=]{ lane_kernel<T,1,2><<<g,bs>>>(units,dfr,dc,dv2,dx,dy,alpha); };
        if (Q == 1 && cap == 1) f = [=]{ lane_kernel<T,1,1><<<g,bs>>>(units,dfr,dc,dv2,dx,dy,alpha); };
        if (Q == 2 && cap == 4) f = [=]{ lane_kernel<T,2,4><<<g,bs>>>(units,dfr,dc,dv2,dx,dy,alpha); };
        if (Q == 2 && cap == 2) f = [=]{ lane_kernel<T,2,2><<<g,bs>>>(units,dfr,dc,dv2,dx,dy,alpha); };
        if (Q == 2 && cap == 1) f = [=]{ lane_kernel<T,2,1><<<g,bs>>>(units,dfr,dc,dv2,dx,dy,alpha); };
        vs.push_back({std::string(nm) + " units=" + std::to_string(units), f});
      }
    }
  }
  std::vector<std::vector<double>> bt(vs.size()), st(vs.size()), it(vs.size());
  for (size_t i = 0; i < vs.size(); i++) { CK(cudaMemset(dy,0xff,A.m*sizeof(T))); vs[i].second(); CK(cudaDeviceSynchronize()); check(vs[i].first.c_str()); for(int w=0;w<50;w++) vs[i].second(); }
  for (int rep = 0; rep < 15; rep++)
    for (size_t i = 0; i < vs.size(); i++) { bt[i].push_back(tm.batch(vs[i].second, 200)); for (int k=0;k<20;k++) st[i].push_back(tm.single(vs[i].second)); auto v = tm.interleaved(vs[i].second, 200); it[i].insert(it[i].end(), v.begin(), v.end()); }
  CK(cudaDeviceSynchronize());
  double base_b = med(bt[0]), base_s = med(st[0]), base_i = med(it[0]);
  for (size_t i = 0; i < vs.size(); i++)
    printf("%s,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", name, sizeof(T)==8?"f64":"f32", vs[i].first.c_str(), med(bt[i]), med(st[i]), med(it[i]), base_b/med(bt[i]), base_s/med(st[i]), base_i/med(it[i]));
  for (void* p : frees) cudaFree(p);
  cudaFree(dx); cudaFree(dy); cudaFree(dval); cudaFree(drp); cudaFree(dci);
}
int main(int argc, char** argv){
  printf("matrix,prec,kernel,batch_us,single_us,evt_us,x_vector_batch,x_vector_single,x_vector_evt\n");
  for (int i = 1; i < argc; i++) { Mat A = readbin(argv[i]); const char* nm = argv[i]; run<double>(nm, A); run<float>(nm, A); }
}
