# Sourced by the device scripts (gpu_check_*.sh, gpu_locked_bert.sh): what each of them needs first.

# unzip_to FILE DEST: a gzipped binary (carried to the device as FILE.gz) unpacked to DEST, made
# executable, its path printed; any other FILE printed as it is.
unzip_to() { case "$1" in *.gz) gunzip -c "$1" > "$2" && chmod +x "$2" && echo "$2" ;; *) echo "$1" ;; esac; }

# The card this machine lent (printed beside every figure) and the system description that matches it.
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
SYS=H200-SXM-141GBx1; nvidia-smi -L | grep -q H100 && SYS=DGX-H100_H100-SXM-80GBx1
