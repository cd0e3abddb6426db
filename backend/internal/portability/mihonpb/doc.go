// Package mihonpb is the Go form of backup.proto: the messages of a Mihon
// or Tachiyomi backup that the import reads. backup.pb.go is generated
// (the command is in backup.proto) and committed.
package mihonpb
