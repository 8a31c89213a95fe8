import CHDF5
import SliceLabSupport

extension HDF5File {
    /// Sets attribute `name` on the object at `path` (the root by default), replacing any previous value.
    /// Rests on `H5Acreate2` and `H5Awrite`.
    public func setAttribute(_ name: String, _ value: HDF5AttributeValue, at path: String = "/") throws {
        let object = try openObject(self, path)
        if H5Aexists(object.id, name) > 0 {
            try hdf5Check(self.path, "replacing attribute \(name)", writing: true) { H5Adelete(object.id, name) }
        }
        func create(_ type: hid_t, _ shape: [Int]) throws -> HDF5Handle {
            let space = try simpleSpace(self.path, shape)
            return try hdf5Open(self.path, "creating attribute \(name) on \(path)", close: H5Aclose) {
                H5Acreate2(object.id, name, type, space.id, chdf5_p_default(), chdf5_p_default())
            }
        }
        func writeNumbers<T: HDF5Scalar>(_ values: [T], shape: [Int]) throws {
            let type = T.hdf5ElementType.nativeType
            let attribute = try create(type, shape)
            try hdf5Check(self.path, "writing attribute \(name)", writing: true) {
                values.withUnsafeBytes { H5Awrite(attribute.id, type, $0.baseAddress) }
            }
        }
        func writeText(_ values: [String], shape: [Int]) throws {
            let type = try variableStringType(self.path)
            let attribute = try create(type.id, shape)
            try writeStringValues(values, file: self.path, type: type) { H5Awrite(attribute.id, $0, $1) }
        }
        switch value {
        case .int(let v): try writeNumbers([v], shape: [])
        case .double(let v): try writeNumbers([v], shape: [])
        case .ints(let v): try writeNumbers(v, shape: [v.count])
        case .doubles(let v): try writeNumbers(v, shape: [v.count])
        case .string(let v): try writeText([v], shape: [])
        case .strings(let v): try writeText(v, shape: [v.count])
        }
    }

    /// Names of the attributes on the object at `path`, in name order.
    public func attributeNames(at path: String = "/") throws -> [String] {
        let object = try openObject(self, path)
        var info = H5O_info_t()
        try hdf5Check(self.path, "attributes of \(path)") { H5Oget_info(object.id, &info) }
        return try (0..<info.num_attrs).map { index in
            let length = H5Aget_name_by_idx(
                object.id, ".", H5_INDEX_NAME, H5_ITER_INC, index, nil, 0,
                chdf5_p_default())
            guard length >= 0 else {
                throw ImageFileError.unreadable(file: self.path, reason: "attributes of \(path): \(hdf5Message())")
            }
            var buffer = [CChar](repeating: 0, count: length + 1)
            _ = H5Aget_name_by_idx(
                object.id, ".", H5_INDEX_NAME, H5_ITER_INC, index, &buffer, buffer.count,
                chdf5_p_default())
            return String(nulTerminated: buffer)
        }
    }

    /// Whether the object at `path` carries attribute `name`.
    public func hasAttribute(_ name: String, at path: String = "/") -> Bool {
        guard exists(path), let object = try? openObject(self, path) else { return false }
        return H5Aexists(object.id, name) > 0
    }

    /// Reads attribute `name` of the object at `path`. Integers read as `Int64`, floats as `Double`; a scalar
    /// dataspace gives a scalar case, a simple one an array case. Rests on `H5Aread`.
    public func attribute(_ name: String, at path: String = "/") throws -> HDF5AttributeValue {
        let object = try openObject(self, path)
        guard H5Aexists(object.id, name) > 0 else {
            throw ImageFileError.missing(file: self.path, object: "\(path)@\(name)")
        }
        let attribute = try hdf5Open(self.path, "opening attribute \(name)", close: H5Aclose) {
            H5Aopen(object.id, name, chdf5_p_default())
        }
        let type = try hdf5Open(self.path, "type of attribute \(name)", close: H5Tclose) { H5Aget_type(attribute.id) }
        let space = try hdf5Open(self.path, "space of attribute \(name)", close: H5Sclose) {
            H5Aget_space(attribute.id)
        }
        let scalar = H5Sget_simple_extent_type(space.id) == H5S_SCALAR
        let count = try extents(self, space, name).reduce(1, *)
        guard count <= 1 << 24 else {
            throw ImageFileError.tooLarge(file: self.path, reason: "attribute \(name) holds \(count) values")
        }
        switch H5Tget_class(type.id) {
        case H5T_INTEGER:
            var values = [Int64](repeating: 0, count: count)
            try hdf5Check(self.path, "reading attribute \(name)") {
                values.withUnsafeMutableBytes { H5Aread(attribute.id, chdf5_native_int64(), $0.baseAddress) }
            }
            return scalar ? .int(values[0]) : .ints(values)
        case H5T_FLOAT:
            var values = [Double](repeating: 0, count: count)
            try hdf5Check(self.path, "reading attribute \(name)") {
                values.withUnsafeMutableBytes { H5Aread(attribute.id, chdf5_native_double(), $0.baseAddress) }
            }
            return scalar ? .double(values[0]) : .doubles(values)
        case H5T_STRING:
            let values = try readStringValues(file: self.path, what: "attribute \(name)", type: type, count: count) {
                H5Aread(attribute.id, $0, $1)
            }
            return scalar ? .string(values.first ?? "") : .strings(values)
        default:
            throw ImageFileError.typeMismatch(
                file: self.path, object: "\(path)@\(name)", reason: "unsupported attribute type")
        }
    }
}
